"""Task generators against independent, deliberately slow references."""

import numpy as np
import pytest

from statelayers.tasks.data import make_split, split_rng, to_arrays
from statelayers.tasks.formal import S3_ELEMENTS, depth_histogram, generate, task_spec


def compose(a: tuple, b: tuple) -> tuple:
    """(a ∘ b)(i) = a(b(i)): apply b first."""
    return tuple(a[b[i]] for i in range(3))


def test_parity_is_running_xor():
    data = generate("parity", 50, 33, np.random.default_rng(0))
    for tokens, labels in zip(data["tokens"], data["labels"]):
        acc = 0
        for token, label in zip(tokens, labels):
            acc = acc ^ int(token)
            assert label == acc


def test_s3_labels_are_prefix_compositions():
    data = generate("s3", 50, 30, np.random.default_rng(1))
    for tokens, labels in zip(data["tokens"], data["labels"]):
        state = (0, 1, 2)
        for token, label in zip(tokens, labels):
            state = compose(S3_ELEMENTS[token], state)  # the newest token acts last
            assert S3_ELEMENTS[label] == state


def test_s3_is_non_commutative_and_order_matters():
    rng = np.random.default_rng(2)
    data = generate("s3", 200, 10, rng)
    reversed_labels = generate_from_tokens_reversed(data["tokens"])
    assert (reversed_labels != data["labels"][:, -1]).any()


def generate_from_tokens_reversed(tokens):
    out = []
    for row in tokens:
        state = (0, 1, 2)
        for token in row[::-1]:
            state = compose(S3_ELEMENTS[token], state)
        out.append(S3_ELEMENTS.index(state))
    return np.array(out)


def dyck_reference(tokens, k):
    """Stack machine: label = 1 + type on top (0 if empty), depth = stack size."""
    stack, labels, depths = [], [], []
    for token in tokens:
        if token < k:
            stack.append(int(token))
        else:
            assert stack and stack[-1] == token - k, "closing bracket must match the top"
            stack.pop()
        labels.append(stack[-1] + 1 if stack else 0)
        depths.append(len(stack))
    return labels, depths


@pytest.mark.parametrize("k,max_depth", [(1, 3), (2, 10), (3, 5)])
def test_dyck_labels_and_depth_match_a_stack_machine(k, max_depth):
    data = generate("dyck", 60, 57, np.random.default_rng(3), {"k": k, "max_depth": max_depth, "open_prob": 0.5})
    for tokens, labels, depth in zip(data["tokens"], data["labels"], data["depth"]):
        ref_labels, ref_depth = dyck_reference(tokens, k)
        assert list(labels) == ref_labels
        assert list(depth) == ref_depth
    assert data["depth"].max() <= max_depth


@pytest.mark.parametrize("length", [40, 120])
def test_dyck_depths_are_not_trivially_shallow(length):
    data = generate(
        "dyck", 500, length, np.random.default_rng(4), {"k": 2, "max_depth": 10, "open_prob": 0.5}
    )
    histogram = depth_histogram(data["depth"], 10)
    assert histogram[10] > 0  # the maximum is reached
    assert histogram[5:].sum() > 0.2  # a good share of tokens sits at depth >= 5
    assert (data["depth"].max(axis=1) >= 5).mean() > 0.5


def test_task_spec_sizes():
    assert task_spec("parity").num_classes == 2
    assert task_spec("s3").vocab_size == 6
    spec = task_spec("dyck", {"k": 3})
    assert (spec.vocab_size, spec.num_classes, spec.targets) == (6, 4, ("labels", "depth"))
    with pytest.raises(ValueError, match="unknown task"):
        task_spec("copy")


def test_splits_are_deterministic_and_independent():
    a = to_arrays(make_split("s3", "train", 20, 40, seed=5).to_pandas())
    b = to_arrays(make_split("s3", "train", 20, 40, seed=5).to_pandas())
    c = to_arrays(make_split("s3", "probe", 20, 40, seed=5).to_pandas())
    np.testing.assert_array_equal(a["tokens"], b["tokens"])
    assert not np.array_equal(a["tokens"], c["tokens"])
    assert a["tokens"].shape == (20, 40)


def test_split_streams_differ_across_lengths_and_seeds():
    draw = lambda *key: split_rng(*key).integers(0, 1 << 30)  # noqa: E731
    assert len({draw(0, "dyck", "test", 40), draw(0, "dyck", "test", 60), draw(1, "dyck", "test", 40)}) == 3


def test_data_file_schema():
    table = make_split("dyck", "test", 4, 12, seed=0, task_params={"k": 2, "max_depth": 10, "open_prob": 0.5})
    assert table.column_names == ["seq_id", "tokens", "labels", "depth"]
    assert str(table.schema.field("tokens").type) == "list<item: int8>"


@pytest.mark.parametrize("n,length", [(0, 5), (3, 0)])
def test_rejects_empty_requests(n, length):
    with pytest.raises(ValueError):
        generate("parity", n, length, np.random.default_rng(0))


def permutation_matrix(p: tuple) -> np.ndarray:
    """The matrix sending basis vector i to p(i): composing permutations multiplies matrices."""
    matrix = np.zeros((3, 3), dtype=int)
    for i, image in enumerate(p):
        matrix[image, i] = 1
    return matrix


def test_s3_sign_and_rotation_match_permutation_matrices():
    """Independent reference: the sign is the determinant, and the rotation the k with
    P(g) = P(r)^k P(s)^sign, found by multiplying matrices."""
    from statelayers.tasks.s3_structure import rotation, sign

    r, s = permutation_matrix((1, 2, 0)), permutation_matrix((1, 0, 2))
    for index, element in enumerate(S3_ELEMENTS):
        matrix = permutation_matrix(element)
        odd = round(np.linalg.det(matrix)) == -1
        assert sign(np.array([index]))[0] == odd
        reflected = np.linalg.matrix_power(s, odd)
        powers = [k for k in range(3) if (np.linalg.matrix_power(r, k) @ reflected == matrix).all()]
        assert rotation(np.array([index])).tolist() == powers
    pairs = {(int(sign(np.array([i]))[0]), int(rotation(np.array([i]))[0])) for i in range(6)}
    assert pairs == {(e, k) for e in (0, 1) for k in range(3)}


def test_the_sign_of_an_s3_prefix_is_the_parity_of_its_odd_tokens_and_the_rotation_needs_the_sign():
    """Z2 is a quotient of S3 (sign is a homomorphism); the rotation composes as
    k(a ∘ b) = k(a) + (-1)^sign(a) k(b) (mod 3), so it is no quotient."""
    from statelayers.tasks.s3_structure import rotation, sign

    data = generate("s3", 40, 25, np.random.default_rng(5))
    odd_tokens = np.cumsum(sign(data["tokens"]), axis=1) % 2
    assert (sign(data["labels"]) == odd_tokens).all()
    index = {p: i for i, p in enumerate(S3_ELEMENTS)}
    for a in range(6):
        for b in range(6):
            product = np.array([index[compose(S3_ELEMENTS[a], S3_ELEMENTS[b])]])
            ka, kb, ea = rotation(np.array([a]))[0], rotation(np.array([b]))[0], sign(np.array([a]))[0]
            assert rotation(product)[0] == (ka + (-1) ** ea * kb) % 3


def test_s3_errors_split_into_wrong_signs_and_right_sign_wrong_rotation_per_position():
    from statelayers.tasks.s3_structure import error_split, probe_targets, rotation, sign

    # identity (even, k 0) at position 1, (0, 2, 1) (odd) at position 2, in three sequences
    labels = np.array([[0, 1], [0, 1], [0, 1]])
    # position 1: right, an even 3-cycle (coset error), an odd element (sign error);
    # position 2: right, (1, 0, 2) (odd, wrong rotation: coset error), the identity (sign error)
    predicted = np.array([[0, 1], [3, 2], [1, 0]])
    split = error_split(predicted, labels)
    assert split["position"].tolist() == [1, 2]
    np.testing.assert_allclose(split["accuracy"], [1 / 3, 1 / 3])
    np.testing.assert_allclose(split["sign_error"], [1 / 3, 1 / 3])
    np.testing.assert_allclose(split["coset_error"], [1 / 3, 1 / 3])
    np.testing.assert_allclose(split["accuracy"] + split["sign_error"] + split["coset_error"], 1)
    np.testing.assert_allclose(split["rotation_accuracy_given_sign"], [1 / 2, 1 / 2])
    targets = probe_targets(labels)
    assert (targets["s3_sign"] == sign(labels)).all() and (targets["s3_rotation"] == rotation(labels)).all()
    with pytest.raises(ValueError, match="shape"):
        error_split(predicted[:, :1], labels)
