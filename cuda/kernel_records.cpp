// The kernel-records collector: loaded into a whole program by CUDA's injection mechanism
// (CUDA_INJECTION64_PATH names this library; the driver calls InitializeInjection at cuInit), it records
// every kernel launch's GPU start and end through CUPTI's activity API (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
// and writes them at exit to the file ATTNBENCH_KERNEL_RECORDS names, which it opens at cuInit (a later
// chdir of the program does not move it). attnbench builds it with nvcc (attnbench/backends/kernel_records.py)
// and reads the file (attnbench/results/kernel_time.py). It runs inside the measured program, so the program
// can forge what it writes: attnbench says so wherever the numbers are shown.
//
// The file, one record a line (the name last: mangled C++ names have no spaces, but nothing depends on it):
//   attnbench-kernel-records 1
//   kernel START_NS END_NS GRID_X GRID_Y GRID_Z BLOCK_X BLOCK_Y BLOCK_Z DEVICE STREAM NAME
//   dropped COUNT        (records CUPTI could not keep: the sums are then short)
//   end LAUNCHES         (written last: a file without it was cut short)
#include <cupti.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

// The kernel record layout of the CUPTI this is built against (its header and library come from one toolkit).
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 KernelRecord;
#elif CUPTI_API_VERSION >= 18
typedef CUpti_ActivityKernel9 KernelRecord;
#else
typedef CUpti_ActivityKernel8 KernelRecord;
#endif

namespace {

const char *const RECORDS_ENV = "ATTNBENCH_KERNEL_RECORDS";
const size_t BUFFER_BYTES = 8 << 20;

struct Launch {
    uint64_t start, end;
    uint32_t grid[3], block[3];
    uint32_t device, stream;
    std::string name;
};

std::mutex guard;  // CUPTI may complete buffers on its own thread
std::vector<Launch> launches;
uint64_t dropped = 0;
FILE *records = nullptr;
bool written = false;

void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = static_cast<uint8_t *>(aligned_alloc(8, BUFFER_BYTES));
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer, size_t, size_t valid) {
    CUpti_Activity *record = nullptr;
    std::lock_guard<std::mutex> lock(guard);
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const KernelRecord *kernel = reinterpret_cast<const KernelRecord *>(record);
        Launch launch{kernel->start, kernel->end,
                      {static_cast<uint32_t>(kernel->gridX), static_cast<uint32_t>(kernel->gridY),
                       static_cast<uint32_t>(kernel->gridZ)},
                      {static_cast<uint32_t>(kernel->blockX), static_cast<uint32_t>(kernel->blockY),
                       static_cast<uint32_t>(kernel->blockZ)},
                      kernel->deviceId, kernel->streamId, kernel->name ? kernel->name : "?"};
        launches.push_back(launch);
    }
    size_t lost = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream, &lost) == CUPTI_SUCCESS) dropped += lost;
    free(buffer);
}

void write_records() {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard<std::mutex> lock(guard);
    if (records == nullptr || written) return;
    written = true;
    for (const Launch &l : launches) {
        std::fprintf(records, "kernel %llu %llu %u %u %u %u %u %u %u %u %s\n", (unsigned long long)l.start,
                     (unsigned long long)l.end, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                     l.device, l.stream, l.name.c_str());
    }
    std::fprintf(records, "dropped %llu\nend %zu\n", (unsigned long long)dropped, launches.size());
    std::fclose(records);
    records = nullptr;
}

// A context destroyed before exit (cudaDeviceReset, say) takes its unflushed records with it: flush first.
void CUPTIAPI on_resource(void *, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void *) {
    if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

}  // namespace

extern "C" int InitializeInjection(void) {
    const char *path = std::getenv(RECORDS_ENV);
    if (path == nullptr || *path == '\0' || records != nullptr) return 1;
    records = std::fopen(path, "w");
    if (records == nullptr) return 1;
    std::fprintf(records, "attnbench-kernel-records 1\n");
    std::fflush(records);
    CUpti_SubscriberHandle subscriber;
    if (cuptiSubscribe(&subscriber, on_resource, nullptr) == CUPTI_SUCCESS)
        cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE);
    cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    std::atexit(write_records);
    return 1;
}
