"""Bad input: each mistake gives a clear exception naming the user's function and where it is."""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from skyline_nb import cells
from skyline_nb.profiler.errors import (
    InputTypeError,
    ProviderError,
    ProviderSignatureError,
    StartingBatchOOMError,
)
from skyline_nb.profiler.session import profile
from skyline_nb.report_checks import impossible_values


def model_provider():
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))


def input_provider(batch_size=4):
    return torch.randn(batch_size, 8), torch.randint(0, 2, (batch_size,))


def iteration_provider(model):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def iteration(x, y):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return iteration


def run(model=model_provider, inputs=input_provider, iteration=iteration_provider, **kwargs):
    kwargs.setdefault("device", "cpu")
    kwargs.setdefault("predict", False)
    return profile(model, inputs, iteration, **kwargs)


@pytest.mark.parametrize("which", ["model", "inputs", "iteration"])
def test_missing_or_not_callable_providers(which):
    with pytest.raises(ProviderSignatureError, match=r"no .* provider was given"):
        run(**{which: None})
    with pytest.raises(ProviderSignatureError, match="must be a function, not int"):
        run(**{which: 3})


def test_wrong_signatures_name_the_function_and_file():
    def needs_args(depth):
        return model_provider()

    with pytest.raises(ProviderSignatureError, match=r"needs_args .*test_profiler_errors\.py"):
        run(model=needs_args)

    def no_batch_size(size=4):
        return input_provider(size)

    with pytest.raises(ProviderSignatureError, match="needs a `batch_size` parameter"):
        run(inputs=no_batch_size)

    def float_default(batch_size=4.0):
        return input_provider(int(batch_size))

    with pytest.raises(ProviderSignatureError, match=r"batch_size default 4.0"):
        run(inputs=float_default)

    def two_args(model, optimizer):
        return iteration_provider(model)

    with pytest.raises(ProviderSignatureError, match="exactly one argument"):
        run(iteration=two_args)


def test_a_step_that_cannot_take_the_inputs_says_which_side_to_change():
    """A step written for one ``batch`` beside inputs returned as ``(x, y)``: refused before
    any step runs, with how inputs are passed; it failed inside the user's step with "takes 1
    positional argument but 2 were given"."""
    def one_batch(model):
        step = iteration_provider(model)
        return lambda batch: step(*batch)

    with pytest.raises(ProviderSignatureError, match=r"(?s)<lambda> .*cannot take what the "
                       r"input provider input_provider .*returns \(2 values\).*\(batch,\)"):
        run(iteration=one_batch)
    # the same step beside a provider of one batch, and a step of *args, run
    assert run(inputs=lambda batch_size=4: (input_provider(batch_size),),
               iteration=one_batch).iteration_ms > 0

    def by_name(model):
        step = iteration_provider(model)
        return lambda x, y: step(x, y)

    with pytest.raises(ProviderSignatureError, match=r"a dict of 'x', 'target'"):
        run(inputs=lambda batch_size=4: dict(zip(("x", "target"), input_provider(batch_size),
                                                 strict=True)),
            iteration=by_name)


def test_no_default_batch_size_needs_the_argument():
    def no_default(batch_size):
        return input_provider(batch_size)

    with pytest.raises(ProviderSignatureError, match="no batch size"):
        run(inputs=no_default)
    assert run(inputs=no_default, batch_size=3).batch_size == 3
    with pytest.raises(ValueError, match="positive integer"):
        run(batch_size=0)


@pytest.mark.parametrize("value", [5, "x", None, ("a", "b"), [1.0, 2.0]])
def test_non_tensor_inputs(value):
    with pytest.raises(InputTypeError, match=r"the input provider .* returned"):
        run(inputs=lambda batch_size=4: value)


def test_dict_and_single_tensor_inputs_are_accepted():
    def dict_iteration_provider(model):
        def iteration(x):
            model(x).sum().backward()

        return iteration

    report = run(inputs=lambda batch_size=4: {"x": torch.randn(batch_size, 8)},
                 iteration=dict_iteration_provider)
    assert report.tree.backward_ms > 0
    report = run(inputs=lambda batch_size=4: torch.randn(batch_size, 8),
                 iteration=dict_iteration_provider)
    assert report.batch_size == 4


def test_model_provider_must_return_a_module():
    with pytest.raises(ProviderError, match=r"returned Tensor; it must return a torch\.nn\.Module"):
        run(model=lambda: torch.zeros(3))


def test_provider_exceptions_are_wrapped_with_their_cause():
    def broken_inputs(batch_size=4):
        raise RuntimeError("disk on fire")

    with pytest.raises(ProviderError, match=r"broken_inputs .* raised RuntimeError: disk on fire"):
        run(inputs=broken_inputs)

    def shape_mismatch(batch_size=4):
        return torch.randn(batch_size, 7), torch.zeros(batch_size, dtype=torch.long)

    with pytest.raises(ProviderError, match=r"the iteration .*iteration_provider.* raised") as err:
        run(inputs=shape_mismatch)
    assert isinstance(err.value.__cause__, RuntimeError)


def test_errors_name_the_notebook_cell_and_line():
    code_name = "/tmp/ipykernel_test/cell_errors.py"
    source = "\n\ndef cell_model():\n    raise ValueError('bad layer')\n"
    cells.register(code_name, "cell-42", source, first_line=2)
    namespace: dict = {}
    exec(compile(source, code_name, "exec"), namespace)
    with pytest.raises(ProviderError, match=re.escape("cell_model (cell cell-42, line 4)")):
        run(model=namespace["cell_model"], cells=cells.lookup)


def test_forward_only_iteration_has_no_backward():
    def forward_only(model):
        def iteration(x, y):
            with torch.no_grad():
                model(x)

        return iteration

    report = run(iteration=forward_only)
    assert all(node.backward_ms is None for node in report.tree.walk())
    assert report.categories["grads"] == 0 and report.tree.activation_bytes == 0  # none saved
    assert report.tree.find("[optimizer]") is None
    assert report.tree.forward_ms == pytest.approx(report.iteration_ms)
    no_backward = [w for w in report.warnings if "no backward pass" in w]
    assert len(no_backward) == 1 and "loss.backward()" in no_backward[0]
    assert not any("no backward pass" in w for w in run().warnings)


def test_nan_loss_is_a_warning():
    def nan_iteration_provider(model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def iteration(x, y):
            optimizer.zero_grad()
            loss = model(x).sum() * float("nan")
            loss.backward()
            optimizer.step()
            return loss

        return iteration

    report = run(iteration=nan_iteration_provider)
    assert any("NaN/inf loss" in w for w in report.warnings)
    assert any("parameter(s) hold NaN/inf" in w for w in report.warnings)


def test_oom_at_the_starting_batch_size():
    with pytest.raises(StartingBatchOOMError, match="batch size 4 does not fit"):
        run(memory_budget=1000)


def test_bad_device():
    with pytest.raises(ValueError, match="not a torch device"):
        run(device="gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="is_available"):
            run(device="cuda")


def test_providers_that_run_only_at_the_users_batch_still_give_the_profile():
    def fixed_labels(batch_size=4):  # labels written for the user's batch only
        return torch.randn(batch_size, 8), torch.randint(0, 2, (4,))

    report = run(inputs=fixed_labels, predict=True)
    assert report.batch_size == 4 and report.tree.total_ms > 0
    assert [s.batch_size for s in report.samples] == [4]
    models = report.models
    assert not models.can_manipulate and models.memory is None
    assert "at batch size 8, the iteration" in models.reason
    assert "Expected input batch_size (8) to match target batch_size (4)" in models.reason
    assert impossible_values(report) == []


def test_a_size_the_input_provider_refuses_ends_the_drag_below_it():
    def at_most_six(batch_size=4):
        if batch_size > 6:
            raise ValueError(f"the dataset has 6 rows, not {batch_size}")
        return input_provider(batch_size)

    report = run(inputs=at_most_six, predict=True)
    assert [s.batch_size for s in report.samples] == [1, 2, 4]  # 8 refused: below instead
    # the inputs alone, cheap to make, narrow it down: 6 runs, 7 does not (range_ends.py)
    assert report.models.fails_at == 7 and report.models.max_batch_size() == 6
    said = [w for w in report.warnings if w.startswith("at batch size ")]
    assert len(said) == 1 and said[0].startswith("at batch size 7, the input provider")
    assert said[0].endswith("the dataset has 6 rows, not 7 (at line 236): predictions stop at "
                            "batch size 6")
    assert impossible_values(report) == []


def test_inputs_that_do_not_follow_the_batch_size_are_not_samples():
    def ignores_it(batch_size=4):
        return input_provider(4)

    rows = torch.randn(6, 8)

    def six_rows(batch_size=4):  # a dataset smaller than the samples: rows[:8] has 6
        return rows[:batch_size], torch.randint(0, 2, (min(batch_size, 6),))

    ignored = run(inputs=ignores_it, predict=True)
    assert [s.batch_size for s in ignored.samples] == [4] and not ignored.models.can_manipulate
    assert ("at batch size 8, the input provider test_inputs_that_do_not_follow_the_batch_size_"
            "are_not_samples.<locals>.ignores_it") in ignored.models.reason
    assert ("none of whose sizes follows the batch size: (4, 8), (4,), where batch size 4 gave "
            "(4, 8), (4,)") in ignored.models.reason
    capped = run(inputs=six_rows, predict=True)
    # 6 rows at 7 are within the one element a provider's rounding may take: 8 stands
    assert [s.batch_size for s in capped.samples] == [1, 2, 4] and capped.models.fails_at == 8
    assert any(w.startswith("at batch size 8") and "(6, 8), (6,)" in w for w in capped.warnings)


def test_inputs_within_one_element_of_the_batch_size_follow_it():
    def pairs(batch_size=10):  # half as many pairs: 5 → 2, not 2.5
        return input_provider(2 * (batch_size // 2))

    report = run(inputs=pairs, predict=True)
    assert len(report.samples) >= 3 and report.models.fails_at is None
    assert not any("follows the batch size" in w for w in report.warnings)


def test_at_batch_size_1_a_provider_that_ignores_it_is_refused_too():
    report = run(inputs=lambda batch_size=1: input_provider(1), predict=True)
    assert [s.batch_size for s in report.samples] == [1]
    assert "at batch size 2, the input provider" in report.models.reason


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")
@pytest.mark.parametrize("layout", [torch.strided, torch.jagged])
def test_nested_tensor_inputs_follow_the_batch_size_by_their_count(layout):
    def sequences(batch_size=4):  # a batch of sequences of 3-5 steps
        steps = [torch.randn(3 + i % 3, 8) for i in range(batch_size)]
        return torch.nested.nested_tensor(steps, layout=layout), torch.randint(0, 2, (batch_size,))

    def iteration_of(model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def iteration(x, y):
            optimizer.zero_grad()
            pooled = torch.stack([step.mean(0) for step in model[0](x).unbind()])
            nn.functional.cross_entropy(model[2](pooled), y).backward()
            optimizer.step()
        return iteration

    report = run(inputs=sequences, iteration=iteration_of, predict=True)
    assert len(report.samples) >= 3
    assert not any("follows the batch size" in w for w in report.warnings)


def test_a_size_refused_below_the_users_starts_the_drag_above_it():
    """A step whose time clearly grows from 64 to 128 is sampled at ½× next (else at 4× and,
    its iterations being cheap, ¼×): below 64 every size is refused."""
    def wide():
        return nn.Sequential(nn.Linear(256, 2048), nn.ReLU(), nn.Linear(2048, 10))

    def at_least_64(batch_size=64):
        if batch_size < 64:
            raise ValueError(f"a batch of {batch_size} has too few pairs")
        return torch.randn(batch_size, 256), torch.randint(0, 10, (batch_size,))

    report = run(model=wide, inputs=at_least_64, predict=True)
    assert min(s.batch_size for s in report.samples) == 64 and len(report.samples) >= 3
    said = [w for w in report.warnings if w.startswith("at batch size ")]
    assert len(said) == 1 and "has too few pairs" in said[0], report.warnings
    models = report.models
    refused = int(said[0].split()[3].rstrip(","))  # "at batch size 32, ..."
    assert models.fails_below == refused and models.min_batch_size() == refused + 1
    assert said[0].endswith(f"predictions start at batch size {refused + 1}")
    assert models.fails_at is None  # a size below bounds nothing above
    # the drag and the scripts' answers stay above it, however little is asked for
    assert models.batch_size_for_memory(0) == models.batch_size_for_throughput(0) == refused + 1
    assert models.knee_batch_size is None or models.knee_batch_size > refused
    assert not impossible_values(report)


def test_batch_norm_over_one_sample_starts_the_drag_at_2():
    """Batch 1, the bottom of the drag range, is tried once after the samples (the cheapest
    iteration, and where user code most often fails): batch norm over one sample raises there."""
    def with_batch_norm():
        return nn.Sequential(nn.Linear(8, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 2))

    report = run(model=with_batch_norm, predict=True)
    models = report.models
    assert models.fails_below == 1 and models.min_batch_size() == 2
    said = [w for w in report.warnings if w.startswith("at batch size 1, the iteration")]
    assert len(said) == 1 and "Expected more than 1 value per channel" in said[0], report.warnings
    assert said[0].endswith("predictions start at batch size 2")
    assert min(s.batch_size for s in report.samples) >= 2
    assert impossible_values(report) == []
    plain = run(predict=True)  # the same step without batch norm runs at 1: nothing to say
    assert plain.models.fails_below is None and plain.models.min_batch_size() == 1
    assert not any(w.startswith("at batch size 1,") for w in plain.warnings)
