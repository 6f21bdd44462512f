"""Each rule of conformance scan, on code it must see and on its safe spelling, which it must not."""

from __future__ import annotations

import textwrap

import pytest

from conformance.scan.analyse import read_source
from conformance.scan.catalogue import Catalogue
from conformance.scan.rules import RULES

TORCH = "import numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
PADDLE = "import numpy as np\nimport paddle\nimport paddle.nn as nn\nimport paddle.nn.functional as F\n"


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue.load()


def codes(catalogue: Catalogue, body: str, header: str = TORCH) -> list[str]:
    reading = read_source(header + textwrap.dedent(body), "snippet.py", catalogue.vocabulary)
    assert reading.error is None, reading.error
    return [s.code for s in reading.sightings]


#: code -> (torch code it must see, the safe spelling it must not)
SNIPPETS = {
    "IC101": ("""
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        y = torch.sigmoid(x)
        y.mul_(2.0)
        y.sum().backward()
        """, """
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        y = torch.cos(x)          # cos saves its input, not its output: writing y is safe
        y.mul_(2.0)
        y.sum().backward()
        """),
    "IC102": ("""
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        x.data *= 3.0
        y.sum().backward()
        """, """
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        y.sum().backward()
        with torch.no_grad():
            x.mul_(3.0)
        """),
    "IC103": ("""
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        x.sin_()
        """, """
        x = torch.tensor([0.5, 1.0], requires_grad=True)
        with torch.no_grad():
            x.sin_()
        nn.init.zeros_(x)         # torch.nn.init runs under no_grad
        """),
    "IC104": ("""
        x = torch.tensor([1.0, 2.0])
        alias = x
        x += 1.0
        print(alias)
        """, """
        x = torch.tensor([1.0, 2.0])
        alias = x.clone()
        x += 1.0
        print(alias)
        """),
    "IC105": ("""
        w = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        x = w * 2.0
        row = x[0]
        row.mul_(2.0)
        (x * x).sum().backward()
        """, """
        w = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        x = w * 2.0
        x[0] = x[0] * 2.0
        (x * x).sum().backward()
        """),
    "IC106": ("""
        a = np.ones(3)
        t = torch.from_numpy(a)
        t.add_(1.0)
        print(a)
        """, """
        a = np.ones(3)
        t = torch.tensor(a)
        t.add_(1.0)
        print(a)
        """),
    "IC107": ("""
        x = torch.tensor([1.0], requires_grad=True)
        n = x.numpy()
        """, """
        x = torch.tensor([1.0], requires_grad=True)
        n = x.detach().numpy()
        """),
    "IC108": ("""
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        (w * w).sum().backward()
        g = w.grad
        g.mul_(0.5)
        """, """
        w = torch.tensor([1.0, 2.0], requires_grad=True)
        (w * w).sum().backward()
        g = w.grad.clone()
        g.mul_(0.5)
        """),
    "IC109": ("""
        gen, disc = nn.Linear(2, 2), nn.Linear(2, 1)
        opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
        opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
        d_fake = disc(gen(torch.ones(1, 2)))
        d_fake.sum().backward(retain_graph=True)
        opt_d.step()
        (-d_fake).sum().backward()
        """, """
        gen, disc = nn.Linear(2, 2), nn.Linear(2, 1)
        opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
        opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
        fake = gen(torch.ones(1, 2))
        disc(fake.detach()).sum().backward()
        opt_d.step()
        (-disc(fake)).sum().backward()
        """),
    "IC110": ("""
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        buf = torch.zeros(2)
        torch.add(x, x, out=buf)
        """, """
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        buf = torch.zeros(2)
        with torch.no_grad():
            torch.add(x, x, out=buf)
        """),
    "IC111": ("""
        @torch.compile
        def f(a, x):
            x[:] = a * 2.0
            return x
        """, """
        @torch.compile
        def f(a, x):
            return a * 2.0
        """),
    "IC112": ("""
        x = torch.tensor([1.0, 2.0])
        y = x.to(torch.float32)
        y.add_(1.0)
        print(x)
        """, """
        x = torch.tensor([1.0, 2.0])
        y = x.to(torch.float32).clone()
        y.add_(1.0)
        print(x)
        """),
    "IC113": ("""
        b = torch.tensor([0.5, 2.0], requires_grad=True)
        t = b * 1.0
        m = t > 1.0
        t[m] = 3.0
        t.sum().backward()
        """, """
        b = torch.tensor([0.5, 2.0], requires_grad=True)
        t = b * 1.0
        m = t > 1.0
        t = torch.where(m, torch.full_like(t, 3.0), t)
        t.sum().backward()
        """),
    "IC114": ("""
        mu = torch.tensor([1.0], requires_grad=True)
        x = torch.zeros(1)
        x.copy_(mu + 1.0)
        """, """
        mu = torch.tensor([1.0], requires_grad=True)
        x = mu + 1.0
        """),
    "IC115": ("""
        w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = w * 2.0
        v = y[0:2]
        v.requires_grad_(False)
        """, """
        w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = w * 2.0
        v = y[0:2].detach()
        """),
    "IC116": ("""
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3.0
        out = (h * h).sum()
        h.retain_grad()
        out.backward(retain_graph=True)
        out.backward()
        """, """
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3.0
        out = (h * h).sum()
        h.retain_grad()
        out.backward()
        """),
    "IC117": ("""
        x = torch.tensor([1.0], requires_grad=True)
        z = x * 2.0
        print(z.grad_fn is None)
        """, """
        x = torch.tensor([1.0], requires_grad=True)
        z = x * 2.0
        print(z.requires_grad)
        """),
    "IC118": ("""
        w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        v = w.unfold(0, 2, 1)
        """, """
        w = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        v = w.unfold(0, 2, 2)     # windows that do not overlap
        """),
    "IC119": ("""
        x = torch.tensor([1.0], requires_grad=True)
        z = x.to(torch.float32, copy=True)
        """, """
        x = torch.tensor([1.0], requires_grad=True)
        z = x.clone()
        """),
    "IC120": ("""
        a = torch.ones(2, 2)
        b = torch.ones(2, 2)
        torch.matmul(a, b, out=a)
        """, """
        a = torch.ones(2, 2)
        b = torch.ones(2, 2)
        c = torch.matmul(a, b)
        a.copy_(c)
        """),
    "IC121": ("""
        x = torch.tensor([1.0, 2.0])
        x.gt_(torch.tensor([1.5, 1.5]))
        x.add_(1.0)
        """, """
        x = torch.tensor([1.0, 2.0])
        m = x > 1.5
        x = torch.where(m, torch.ones(2), torch.zeros(2))
        x.add_(1.0)
        """),
    "IC122": ("""
        x = torch.ones(1, 2, 2)
        p = F.pad(x, [1, 1])
        """, """
        x = torch.ones(2, 2)
        p = torch.zeros(2, 4)
        p[:, 1:3] = x
        """),
    "IC123": ("""
        x = torch.zeros(2, 3)
        a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
        x[0] = a
        """, """
        x = torch.zeros(2, 3)
        a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
        x[0] = torch.tensor(a)
        """),
    "IC124": ("""
        x = torch.tensor([[0.0, 1.875, 0.0, 2.0]])
        w = x.view(torch.float64)
        """, """
        x = torch.tensor([[0.0, 1.875, 0.0, 2.0]], dtype=torch.float64)
        w = x.view(torch.float64)
        """),
    "IC125": ("""
        a = torch.tensor([0.3, 0.5], requires_grad=True)
        b = a ** 2
        b.asinh_()
        b.sum().backward()
        """, """
        a = torch.tensor([0.3, 0.5], requires_grad=True)
        b = a ** 2
        b = torch.asinh(b)        # out of place: torch has its derivative
        b.sum().backward()
        """),
}


def test_every_rule_has_snippets() -> None:
    assert sorted(SNIPPETS) == sorted(rule.code for rule in RULES)


@pytest.mark.parametrize("code", sorted(SNIPPETS))
def test_a_rule_sees_its_pattern(catalogue: Catalogue, code: str) -> None:
    assert code in codes(catalogue, SNIPPETS[code][0])


@pytest.mark.parametrize("code", sorted(SNIPPETS))
def test_a_rule_keeps_quiet_on_the_safe_spelling(catalogue: Catalogue, code: str) -> None:
    assert code not in codes(catalogue, SNIPPETS[code][1])


def test_paddle_code_is_read_in_paddle_spellings(catalogue: Catalogue) -> None:
    seen = codes(catalogue, """
        x = paddle.to_tensor([0.5, 1.0], stop_gradient=False)
        y = F.sigmoid(x)
        y.multiply_(paddle.to_tensor(2.0))
        y.sum().backward()
        w = paddle.to_tensor([1.0], stop_gradient=False)
        w.sin_()
        v = (w * 2.0)[0:1]
        v.stop_gradient = True
        """, PADDLE)
    assert seen == ["IC101", "IC103", "IC115"]


def test_a_module_the_class_sets_in_init_is_called_in_forward(catalogue: Catalogue) -> None:
    seen = codes(catalogue, """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(2, 3)
                self.act = nn.ReLU(inplace=True)

            def forward(self, inp, feature):
                h = self.fc(inp)
                s = torch.sin(h)
                r = self.act(h)      # writes h in place: the h sin saved
                return s * r
        """)
    assert seen == ["IC101"]


def test_an_alias_is_the_same_tensor_and_a_rebinding_is_not(catalogue: Catalogue) -> None:
    seen = codes(catalogue, """
        class Block(nn.Module):
            def forward(self, x):
                skip = x
                x = torch.relu(x)        # x is another tensor now
                x += 1.0
                return x + skip
        """)
    assert "IC104" not in seen


def test_unknown_values_are_left_alone(catalogue: Catalogue) -> None:
    """A dict, a list, a number, a value a function of another module returned: none is a tensor."""
    seen = codes(catalogue, """
        def helper(state, results):
            config = load_config()
            config["stride"] = 1
            results[0] = state * 2
            out = other_module.compute(state)
            out.mul_(2.0)
            total = 0
            total += 1
        """)
    assert seen == []


def test_an_optimizer_step_body_writes_parameters_without_recording(catalogue: Catalogue) -> None:
    seen = codes(catalogue, """
        class MySGD(torch.optim.Optimizer):
            def step(self):
                for group in self.param_groups:
                    for p in group["params"]:
                        p.add_(p.grad, alpha=-0.1)
        p = nn.Parameter(torch.ones(2))
        with torch.no_grad():
            p.add_(1.0)
        """)
    assert seen == []


def test_a_branch_that_rebinds_a_name_leaves_it_unknown_after(catalogue: Catalogue) -> None:
    seen = codes(catalogue, """
        x = torch.tensor([1.0], requires_grad=True)
        if flag:
            y = torch.exp(x)
        else:
            y = torch.zeros(1)
        y.add_(1.0)
        y.sum().backward()
        """)
    assert "IC101" not in seen


def test_a_hidden_state_carried_across_iterations(catalogue: Catalogue) -> None:
    seen = codes(catalogue, """
        rnn = nn.RNN(1, 1)
        opt = torch.optim.SGD(rnn.parameters(), lr=0.01)
        h = torch.zeros(1, 1, 1)
        for x, y in data:
            out, h = rnn(x, h)
            F.mse_loss(out, y).backward(retain_graph=True)
            opt.step()
        """)
    assert seen == ["IC109"]
    detached = codes(catalogue, """
        rnn = nn.RNN(1, 1)
        opt = torch.optim.SGD(rnn.parameters(), lr=0.01)
        h = torch.zeros(1, 1, 1)
        for x, y in data:
            out, h_next = rnn(x, h)
            F.mse_loss(out, y).backward()
            opt.step()
            h = h_next.detach()
        """)
    assert detached == []


def test_an_in_place_write_into_an_expanded_tensor_is_seen_without_a_read_after(catalogue: Catalogue) -> None:
    """expand's result holds each element of its input several times (the op's facts, from the reference):
    writing it in place is the hazard itself (torch refuses it), whatever is read later; an expand that is
    cloned first, and a write into a plain slice with nothing read after, are not."""
    for header, make, write in ((TORCH, "torch.tensor", "F.silu(x, inplace=True)"),
                                (PADDLE, "paddle.to_tensor", "F.silu(x, inplace=True)"),
                                (TORCH, "torch.tensor", "x.mul_(2.0)")):
        reading = read_source(header + textwrap.dedent(f"""
            row = {make}([[0.5, -1.0]])
            x = row.expand([3, 2])
            {write}
            """), "snippet.py", catalogue.vocabulary)
        found = [s for s in reading.sightings if s.code == "IC105"]
        assert found and dict(found[0].facets)["read"] == "overlap", (write, reading.sightings)
        assert "`x` is written in place" in found[0].says  # the tensor written, never the module F
    assert codes(catalogue, """
        row = torch.tensor([[0.5, -1.0]])
        x = row.expand(3, 2).clone()
        F.silu(x, inplace=True)
        y = torch.tensor([1.0, 2.0, 3.0])
        y[0:2].mul_(2.0)
        """) == []


def test_inplace_true_spells_the_in_place_op_where_the_catalogue_shows_it(catalogue: Catalogue) -> None:
    """F.silu(x, inplace=True) is silu_ and F.silu(x) is silu: two ops of one function, told apart by the
    keyword, as the kept programs spell them."""
    vocabulary = catalogue.vocabulary
    assert vocabulary.lookup("torch", "fn:torch.nn.functional.silu+inplace").op == "silu_"
    assert vocabulary.lookup("torch", "fn:torch.nn.functional.silu").op == "silu"
    assert vocabulary.lookup("paddle", "fn:paddle.nn.functional.silu+inplace").op == "silu_"
    # a function whose in-place call no kept program shows falls back to the function itself
    assert vocabulary.lookup("torch", "fn:torch.nn.functional.relu+inplace").op == "relu"


@pytest.mark.parametrize("header, initialise", [
    (TORCH, "nn.init.constant_(fc.weight, 0.5)"),
    (PADDLE, "nn.initializer.Constant(value=0.5)(fc.weight)"),  # an initializer made and called at once
])
def test_a_parameter_initialised_again_between_forward_and_backward_makes_the_graph_stale(
        catalogue: Catalogue, header: str, initialise: str) -> None:
    """An initialiser writes a parameter without recording it (the op's facts: untracked): backward then
    reaches values computed from the old weight (cases/init/init_between_forward_and_backward)."""
    make = "torch.ones([1, 2], requires_grad=True)" if header == TORCH else "paddle.ones([1, 2])"
    before = codes(catalogue, f"""
        fc = nn.Linear(2, 3)
        x = {make}
        y = fc(x)
        {initialise}
        y.sum().backward()
        """, header)
    assert before == ["IC109"]
    after = codes(catalogue, f"""
        fc = nn.Linear(2, 3)
        x = {make}
        y = fc(x)
        y.sum().backward()
        {initialise}
        """, header)
    assert after == []


def test_a_write_through_a_part_of_unsafe_split_is_a_write_into_the_tensor_it_split(catalogue: Catalogue) -> None:
    """unsafe_split binds several views, as split does (the registry says it binds many; the reference, that
    they are views): writing one writes x, which mul saved."""
    seen = codes(catalogue, """
        p = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        x = p * 1
        y = x * x
        a, b = torch.unsafe_split(x, 2)
        a.mul_(10.0)
        y.sum().backward()
        """)
    assert seen and set(seen) <= {"IC101", "IC105"}, seen
    quiet = codes(catalogue, """
        p = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        x = p * 1
        y = x * x
        a, b = torch.unsafe_split(x, 2)
        a10 = a * 10.0
        y.sum().backward()
        """)
    assert quiet == []


@pytest.mark.parametrize("make", ["nn.BatchNorm1d(3)", "Norm()"])
def test_a_module_s_buffer_written_in_forward_is_no_leaf_that_requires_grad(catalogue: Catalogue, make: str) -> None:
    """A batch norm's running statistics are buffers (the registry's module kind says so): updating them in
    place, as timm's EvoNorm does in its forward, writes no parameter."""
    seen = codes(catalogue, f"""
        class Norm(nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = nn.Parameter(torch.ones(3))
                self.register_buffer("running_var", torch.ones(3))

            def forward(self, x):
                self.running_var.copy_(self.running_var * 0.9 + x.var(dim=0) * 0.1)
                return x * self.weight

        norm = {make}
        norm.running_var.copy_(torch.zeros(3))
        """)
    assert "IC103" not in seen, seen


def test_an_in_place_comparison_read_out_of_place_is_left_alone(catalogue: Catalogue) -> None:
    """timm's ResidualDrop writes `torch.rand(...).ge_(p).div(1 - p)`: the comparison's result is divided out of
    place, which paddle promotes as torch computes; only arithmetic written into it in place is refused."""
    assert "IC121" not in codes(catalogue, """
        x = torch.rand(4, 1, 1, 1).ge_(0.5).div(0.5)
        """)


def test_a_second_in_place_logical_op_into_a_comparison_result_is_seen(catalogue: Catalogue) -> None:
    """A mask built up in place (`x.logical_and_(y); x.logical_or_(z)`): paddle's first op made x bool, and
    its second refuses the float operand."""
    assert "IC121" in codes(catalogue, """
        x = torch.tensor([1.0, 0.0])
        y = torch.tensor([1.0, 1.0])
        x.logical_and_(y)
        x.logical_or_(y)
        """)
    assert "IC121" not in codes(catalogue, """
        x = torch.tensor([1.0, 0.0])
        y = torch.tensor([1.0, 1.0])
        x.logical_and_(y)
        z = x * 2.0
        """)


def test_a_python_list_assigned_by_index_is_seen(catalogue: Catalogue) -> None:
    assert "IC123" in codes(catalogue, """
        x = torch.zeros(2, 3)
        x[0] = [1.0, 2.0, 3.0]
        """)
    assert "IC123" not in codes(catalogue, """
        x = torch.zeros(2, 3)
        x[0] = torch.tensor([1.0, 2.0, 3.0])
        y = [1.0, 2.0]
        """)


def test_numpy_arithmetic_and_a_deep_copy_of_a_dict_are_not_tensors(catalogue: Catalogue) -> None:
    """Found auditing real code: `np.ones(...) * v` is a NumPy array (assigning into it is NumPy's business),
    and `copy.deepcopy(sample)` of a dict is a dict; only a tensor the code shows is one is read as one."""
    assert "IC123" not in codes(catalogue, """
        def crop(img):
            out = np.ones((3, 4, 1)) * 2.0
            out[0:1, :, :] = img[0:1, ...]
            new = np.zeros_like(np.array(img)) + 1
            new[0:1] = np.array(img)[0:1]
            return out, new

        def item(samples):
            import copy
            sample = copy.deepcopy(samples[0])
            sample['gt_fields'] = []
            return sample
        """)
    assert "IC123" in codes(catalogue, """
        import copy
        w = torch.ones(3, requires_grad=True)
        w2 = copy.deepcopy(w)
        w2[0] = [1.0]
        """)


def test_numpy_s_own_copying_array_of_a_tensor_is_no_copying_conversion(catalogue: Catalogue) -> None:
    """Found scanning the reproducers `conformance show` prints: NumPy's `np.array(t, copy=True)` leaves the
    graph by design; only the frameworks' `to(..., copy=True)` is the conversion IC119 is about."""
    for header in (TORCH, PADDLE):
        assert "IC119" not in codes(catalogue, """
            def values(value):
                return np.array(value, copy=True)
            """, header)
    assert "IC119" in codes(catalogue, """
        x = torch.tensor([1.0], requires_grad=True)
        a = np.array(x.detach(), copy=True)
        z = x.to(torch.float32, copy=True)
        """)


def test_a_shape_factory_makes_a_leaf_whatever_the_catalogue_spells_with_it(catalogue: Catalogue) -> None:
    """The catalogue's tensor hook makes its holder with zeros_like; user code's zeros_like(x,
    requires_grad=True) is still a leaf, and writing it in place is seen."""
    assert "IC103" in codes(catalogue, """
        x = torch.ones(2)
        w = torch.zeros_like(x, requires_grad=True)
        w.add_(1.0)
        """)


def test_numpy_values_in_mixed_code_are_not_taken_for_an_array_assigned_into_a_tensor(catalogue: Catalogue) -> None:
    """Found auditing real code: a NumPy scalar computed by arithmetic (which torch's index assignment takes)
    assigned into a tensor element, and an array assigned into a NumPy buffer that arithmetic with an unknown
    attribute made."""
    assert "IC123" not in codes(catalogue, """
        def bilinear(f, cc):
            weights = torch.zeros((4, 4))
            for y in range(4):
                for x in range(4):
                    weights[y, x] = (1 - np.abs(x / f - cc)) * (1 - np.abs(y / f - cc))
            return weights

        class Crop:
            def __init__(self, padding_num):
                self.padding_num = padding_num

            def __call__(self, img):
                new = np.zeros_like(np.array(img)) + self.padding_num
                new[0:2, 0:2, :] = np.array(img)
                return new
        """)


def test_a_wider_dtype_view_is_seen_only_of_a_tensor_made_narrower(catalogue: Catalogue) -> None:
    """The trace keeps no dtypes: the rule reads the constructor, and says nothing of a tensor it cannot see made."""
    assert "IC124" in codes(catalogue, """
        x = torch.zeros(2, 4)
        w = x.view(torch.int64)
        """)
    assert "IC124" in codes(catalogue, """
        x = torch.tensor([1, 2, 3, 4], dtype=torch.int32)
        w = x.view(torch.int64)
        """)
    for quiet in ("""
        x = torch.tensor([1, 2, 3, 4])
        w = x.view(torch.float64)
        """, """
        def f(x):
            return x.view(torch.float64)
        """, """
        x = torch.zeros(2, 4)
        w = x.view(torch.int32)
        """, """
        x = torch.zeros(2, 4)
        w = x.view(2, 4)
        """):
        assert "IC124" not in codes(catalogue, quiet)


def test_a_view_made_after_a_relayout_shares_the_new_memory(catalogue: Catalogue) -> None:
    """cast_ (like resize_ and set_) moves a tensor to other memory: a view taken before it still looks at the
    old memory (IC105, ``after: relayout``), one taken after looks at the new, as the base does (``after:
    none``), so the safe order is not mistaken for the hazard."""
    def after(body: str) -> list[str]:
        reading = read_source(PADDLE + textwrap.dedent(body), "snippet.py", catalogue.vocabulary)
        return [dict(s.facets)["after"] for s in reading.sightings
                if s.code == "IC105" and dict(s.facets)["writer"] == "setitem"]

    assert after("""
        x = paddle.to_tensor([1.7, -2.5, 3.9, -0.5])
        v = x[2:]
        x.cast_('int32')
        x[3] = 7
        print(v)
        """) == ["relayout"]
    assert after("""
        x = paddle.to_tensor([1.7, -2.5, 3.9, -0.5])
        x.cast_('int32')
        v = x[2:]
        x[3] = 7
        print(v)
        """) == ["none"]
