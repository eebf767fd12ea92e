"""What `attnbench profile --save` names: the profile's file stem."""

import datetime as dt

from attnbench.output.export.profile_export import profile_stem


def test_a_saved_profile_is_named_by_date_gpu_case_and_variants():
    stem = profile_stem({"gpu": {"name": "NVIDIA H200"}}, "t29", ["qreg", "bankfree"])
    assert stem == f"{dt.date.today().isoformat()}_h200_profile_t29_qreg-bankfree"
