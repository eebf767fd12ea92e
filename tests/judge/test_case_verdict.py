"""attnbench.judge.case_verdict: an output's values to one verdict, with what a wrong one looks like."""

import numpy as np

from attnbench.judge.case_verdict import PASS, WRONG_ANSWER, check_values


def test_an_output_of_zeros_says_a_kernel_may_not_have_launched():
    reference = np.linspace(-2.99, 2.5, 2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    verdict, message, _ = check_values(np.zeros_like(reference), reference)
    assert verdict == WRONG_ANSWER
    assert message.startswith("every element is 0: a kernel may have failed to launch; ")


def test_a_wrong_output_that_is_not_all_zeros_gets_only_the_numbers():
    reference = np.linspace(-2.99, 2.5, 24, dtype=np.float32).reshape(2, 3, 4)
    wrong = reference.copy()
    wrong[0, 0, 0] = 0.0
    verdict, message, _ = check_values(wrong, reference)
    assert verdict == WRONG_ANSWER and message.startswith("1 of 24 elements off")
    assert check_values(np.zeros_like(reference), np.zeros_like(reference))[0] == PASS  # zeros that are right pass
