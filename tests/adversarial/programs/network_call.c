/* Trick: call out over the network, to a server the test starts on 127.0.0.1 (-DPORT=...), to send
 * the input away or fetch an answer. Prints "connected" and exits 5, or prints why not and exits 6. */
#include "common.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef PORT
#define PORT 9
#endif

int main(int argc, char **argv) {
    if (argc < 3) return 1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) { fprintf(stderr, "no network: socket: %s\n", strerror(errno)); return 6; }
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(PORT);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        fprintf(stderr, "no network: connect: %s\n", strerror(errno));
        return 6;
    }
    (void)write(fd, "hello", 5);
    close(fd);
    fprintf(stderr, "connected\n");
    return 5;
}
