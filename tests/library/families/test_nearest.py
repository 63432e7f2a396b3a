"""The k-nearest kernel (ensel/library/families/_nearest.py) against a brute-force reference:
every pairwise distance, then a stable sort by (distance, training index)."""

import numpy as np
import pytest

from ensel.library.families._nearest import nearest


def reference(Q, X, k):
    """Indices of the k nearest, ties to the lower index, and all squared distances."""
    sq = ((Q[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    order = np.argsort(sq, axis=1, kind="stable")[:, :k]
    return order, sq


def assert_nested_sets(index, expected, ks):
    for k in ks:
        got = np.sort(index[:, :k], axis=1)
        want = np.sort(expected[:, :k], axis=1)
        np.testing.assert_array_equal(got, want, err_msg=f"k={k}")


@pytest.mark.parametrize("values", ["ties", "continuous"])
@pytest.mark.parametrize(
    "n, d, ks",
    [(1, 2, (1,)), (40, 3, (1, 5, 40)), (900, 4, (1, 3, 9, 65, 257)), (5000, 2, (2, 17, 600))],
)
def test_each_k_gets_its_k_nearest_with_ties_to_the_lower_index(n, d, ks, values):
    rng = np.random.default_rng(n + d)
    draw = (
        (lambda m: rng.integers(0, 3, (m, d)).astype(float))
        if values == "ties"
        else (lambda m: rng.normal(size=(m, d)))
    )
    X, Q = draw(n), draw(70)
    index, sq = nearest(Q, X, ks)
    expected, all_sq = reference(Q, X, max(ks))
    assert index.shape == sq.shape == (70, max(ks))
    assert_nested_sets(index, expected, ks)
    np.testing.assert_allclose(sq, np.take_along_axis(all_sq, index, axis=1), rtol=1e-12)


def test_tiles_and_buffers_smaller_than_the_data_give_the_same_answer(monkeypatch):
    """Many tiles per row and many buffer cuts: the streaming paths, not one pass."""
    from ensel.library.families import _nearest

    rng = np.random.default_rng(1)
    X, Q = rng.integers(0, 4, (3000, 3)).astype(float), rng.integers(0, 4, (40, 3)).astype(float)
    expected, _ = reference(Q, X, 50)
    monkeypatch.setattr(_nearest, "_TILE_VALUES", 64 * 3)  # 64 training rows per tile
    index, _ = nearest(Q, X, (1, 7, 50))
    assert_nested_sets(index, expected, (1, 7, 50))


def test_a_first_bound_that_leaves_too_few_points_falls_back_to_a_full_scan():
    """Every sampled point at one distance: the guessed bound has no point strictly below it,
    so each row is scanned again without it."""
    X = np.vstack([np.ones((1000, 2)), np.zeros((3, 2))])
    index, sq = nearest(np.full((4, 2), 2.0), X, (5,))
    np.testing.assert_array_equal(np.sort(index, axis=1), np.tile(np.arange(5), (4, 1)))
    np.testing.assert_array_equal(sq, 2.0)


@pytest.mark.parametrize("n_cols", [3, 45])
def test_narrow_and_wide_rows_agree_with_the_reference(n_cols):
    """Up to 32 columns the distances are summed directly, above from BLAS dot products."""
    rng = np.random.default_rng(n_cols)
    X, Q = rng.normal(size=(700, n_cols)), rng.normal(size=(30, n_cols))
    index, sq = nearest(Q, X, (1, 10, 100))
    expected, all_sq = reference(Q, X, 100)
    assert_nested_sets(index, expected, (1, 10, 100))
    np.testing.assert_allclose(sq, np.take_along_axis(all_sq, index, axis=1), rtol=1e-9)


def test_coincident_points_are_at_distance_zero():
    X = np.array([[0.1, 0.7], [0.3, 0.2], [0.1, 0.7]])
    index, sq = nearest(X[:1], X, (2,))
    assert sorted(index[0]) == [0, 2] and np.all(sq == 0.0)


@pytest.mark.parametrize("ks", [(0,), (4,), ()])
def test_a_k_outside_the_training_rows_is_refused(ks):
    with pytest.raises(ValueError, match="between 1 and the 3 training rows"):
        nearest(np.zeros((2, 2)), np.zeros((3, 2)), ks)


def test_queries_of_another_width_are_refused():
    with pytest.raises(ValueError, match="training rows of 2 columns"):
        nearest(np.zeros((2, 3)), np.zeros((3, 2)), (1,))
