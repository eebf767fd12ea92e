"""The shared fixtures' promises: inputs depend only on the seed and the test id; hypothesis is seeded."""

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import TEST_SEED, rng_for


@given(st.text(max_size=40))
def test_a_test_id_always_gets_the_same_generator(nodeid):
    assert rng_for(nodeid).integers(1 << 62) == rng_for(nodeid).integers(1 << 62)


def test_every_hypothesis_test_is_seeded_at_collection(request):
    hypothesis_tests = [i for i in request.session.items
                        if getattr(getattr(i, "function", None), "is_hypothesis_test", False)]
    assert hypothesis_tests, "this file holds a hypothesis test"
    for item in hypothesis_tests:
        assert getattr(item.function, "_hypothesis_internal_use_seed", None) == TEST_SEED, item.nodeid
