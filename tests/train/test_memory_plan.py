"""The memory plan (albert.train.memory_plan), checked against real models: parameter counts,
the plan's parts, and the micro-batch it lets the batch plan choose."""

import pytest

from albert.model.config import AlbertConfig
from albert.train.batch_plan import largest_micro_batch
from albert.train.memory_plan import GIB, activation_bytes, memory_plan, parameter_count


@pytest.mark.parametrize("overrides", [{}, {"num_hidden_groups": 2, "inner_group_num": 2},
                                       {"pre_layer_norm": True}],
                         ids=["tiny", "groups", "pre_ln"])
def test_parameter_count_is_exact_for_every_head(overrides):
    from albert import AlbertForPreTraining, AlbertForQuestionAnswering
    from albert.model.modeling import AlbertForSequenceClassification

    config = AlbertConfig.from_preset("tiny", vocab_size=500, **overrides)
    for head, model in (("pretraining", AlbertForPreTraining(config)),
                        ("squad", AlbertForQuestionAnswering(config)),
                        ("classification", AlbertForSequenceClassification(config, num_labels=3))):
        model.build_for_config()
        real = sum(int(v.numpy().size) for v in model.weights)
        assert parameter_count(config, head, num_labels=3) == real, head


def test_published_sizes():
    # ALBERT v2 as released (with the MLM and SOP heads): base 11.8M ... xxlarge 223M.
    counts = {name: parameter_count(AlbertConfig.from_preset(name))
              for name in ("base", "large", "xlarge", "xxlarge")}
    assert counts == {"base": 11_813_810, "large": 17_847_474, "xlarge": 59_021_490,
                      "xxlarge": 223_158_450}


def test_plan_parts():
    config = AlbertConfig.from_preset("xxlarge")
    params = parameter_count(config)
    plan = memory_plan(config, 512, 8, precision="bf16")
    # Float32 weights, gradients and two optimizer slots whatever the precision.
    assert (plan.weights, plan.gradients, plan.optimizer) == (4 * params, 4 * params, 8 * params)
    assert plan.allreduce == 0  # one rank: nothing to reduce
    assert plan.total == (plan.weights + plan.gradients + plan.optimizer + plan.activations
                          + plan.runtime)
    # Accumulation keeps the running sum beside each micro-batch's gradients.
    assert memory_plan(config, 512, 8, accumulation=4).gradients == 8 * params
    eight = memory_plan(config, 512, 8, ranks=8)
    assert eight.allreduce > 4 * params  # the averaged copy and Horovod's fusion buffer
    fp16_wire = memory_plan(config, 512, 8, ranks=8, fp16_allreduce=True)
    assert fp16_wire.allreduce > eight.allreduce  # the fp16 copies on the way
    line = plan.describe()
    assert line.startswith("memory plan: ") and "GB per GPU" in line and "recompute none" in line


def test_activations_shrink_with_recompute_and_lower_precision():
    config = AlbertConfig.from_preset("xlarge")
    none = activation_bytes(config, 512, 8)
    layers = activation_bytes(config, 512, 8, recompute="layers")
    assert layers < 0.25 * none
    assert activation_bytes(config, 512, 8, precision="bf16") < 0.85 * none
    # Without recompute the activations grow with the micro-batch (and quadratically with the
    # sequence through the attention scores); dropout adds its masks.
    assert activation_bytes(config, 512, 16) > 1.9 * none
    assert activation_bytes(config, 256, 8) < 0.5 * none
    dropout = AlbertConfig.from_preset("xlarge", hidden_dropout_prob=0.1,
                                       attention_probs_dropout_prob=0.1)
    assert activation_bytes(dropout, 512, 8) > 1.2 * none


def test_plan_decides_more_fits_with_recompute():
    config = AlbertConfig.from_preset("xlarge")
    budget = 16 * GIB

    def fits(recompute):
        return lambda m: memory_plan(config, 512, m, recompute=recompute).total <= budget

    without = largest_micro_batch(fits("none"), 4096, 1, why="16 GB")
    with_recompute = largest_micro_batch(fits("layers"), 4096, 1, why="16 GB")
    assert with_recompute.micro_batch >= 4 * without.micro_batch
    assert without.micro_batch * without.accumulation == 4096


def test_bad_names_are_errors():
    config = AlbertConfig.from_preset("tiny")
    with pytest.raises(ValueError, match="^recompute must be one of"):
        memory_plan(config, 128, 8, recompute="attention")
    with pytest.raises(ValueError, match="^precision must be one of"):
        memory_plan(config, 128, 8, precision="fp8")
    with pytest.raises(ValueError, match="head must be one of"):
        parameter_count(config, "ner")
