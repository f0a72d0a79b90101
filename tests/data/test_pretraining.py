"""albert.data.pretraining: instances from a document, n-gram masking, and the hand-written
tf.train.Example that TensorFlow parses."""

import random

import pytest
import tensorflow as tf

from albert.data.pretraining import Instance, InstanceMaker, InstanceOptions, is_start_piece
from albert.errors import SettingError


@pytest.fixture(scope="module")
def maker(sample_vocab):
    return InstanceMaker(sample_vocab, InstanceOptions(32, 5))


def test_serialized_example_parses_as_tensorflow_writes_it(maker):
    inst = Instance(input_ids=[2, 300, 4, 3, 1500, 3], segment_ids=[0, 0, 0, 0, 1, 1],
                    token_boundary=[1, 1, 0, 1, 1, 1], masked_lm_positions=[2],
                    masked_lm_ids=[17000 % 2000], is_swapped=True)
    spec = {name: tf.io.FixedLenFeature([n], tf.int64) for name, n in (
        ("input_ids", 32), ("input_mask", 32), ("segment_ids", 32), ("token_boundary", 32),
        ("masked_lm_positions", 5), ("masked_lm_ids", 5), ("next_sentence_labels", 1))}
    spec["masked_lm_weights"] = tf.io.FixedLenFeature([5], tf.float32)
    ex = {k: v.numpy().tolist() for k, v in
          tf.io.parse_single_example(maker.serialize(inst), spec).items()}
    assert ex["input_ids"] == [2, 300, 4, 3, 1500, 3] + [0] * 26
    assert ex["input_mask"] == [1] * 6 + [0] * 26
    assert ex["segment_ids"][:7] == [0, 0, 0, 0, 1, 1, 0]
    assert ex["masked_lm_positions"] == [2, 0, 0, 0, 0]
    assert ex["masked_lm_ids"] == [1000, 0, 0, 0, 0]
    assert ex["masked_lm_weights"] == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert ex["next_sentence_labels"] == [1]


def test_instances_fit_the_sequence_and_mask_real_tokens(maker):
    doc = maker.tokenize_document(
        [f"Sentence number {i} says what the interpreter does with a file." for i in range(30)])
    instances = maker.instances_from_document(doc, random.Random(0))
    assert instances
    for inst in instances:
        n = len(inst.input_ids)
        assert n <= 32 and inst.input_ids[0] == 2 and inst.input_ids[-1] == 3
        assert inst.input_ids.count(3) == 2 and len(inst.segment_ids) == n
        assert 0 < len(inst.masked_lm_positions) <= 5
        assert inst.masked_lm_positions == sorted(set(inst.masked_lm_positions))
        assert all(inst.input_ids[p] not in (2, 3) or inst.masked_lm_ids[i] not in (2, 3)
                   for i, p in enumerate(inst.masked_lm_positions))
        assert not {2, 3} & set(inst.masked_lm_ids)
    # Seeded: the same rng gives the same instances.
    assert maker.instances_from_document(doc, random.Random(0)) == instances


def test_start_pieces_and_bad_options():
    assert is_start_piece("\u2581the") and is_start_piece(",") and is_start_piece("<unk>")
    assert not is_start_piece("ing")
    for options, message in ((InstanceOptions(4), "^max_seq_length must be at least 8"),
                             (InstanceOptions(masked_lm_prob=1.0), "^masked_lm_prob"),
                             (InstanceOptions(max_predictions_per_seq=0), "predictions")):
        with pytest.raises(SettingError, match=message):
            options.validate()
