"""The grader's own verdict: the book's check code, run in the grader's process, on the answer
as data (issue 34).

The submission's code runs only in its kernel (the sandbox). After an exercise's check passed
there, the grader runs the *book's* check code (the instructor's copy, never the submission's)
again here, in the grader's process, where no submission code ever ran, and takes the verdict
from that run. The names the check reads cross the boundary as follows:

- names the chapter imports (``torch``, ``F``, ``numerical_grad`` ...) are the grader's own
  imports, whatever the notebook rebound them to; builtins are the grader's builtins;
- tensors and plain values (numbers, strings, lists, tuples, dicts, NumPy arrays, paths) are
  written by ``torch.save`` in the sandbox and read here by ``torch.load(weights_only=True)``,
  which runs no code, then checked to be of exactly those types;
- anything else (a function, a class, a model, a dataset, an object with its own ``__eq__``,
  a subclass of ``int`` or of ``Tensor``) stays in the sandbox and is a :class:`Remote` here:
  the check may call it, index it, iterate it or read its attributes (each done in the sandbox
  on arguments the grader sends as data; the results come back as data, or as more remotes),
  but never compare it, test its truth or hash it: doing so fails the check with a hint that
  says why. So a "passed" here means the answer's values, and its functions' outputs on the
  check's own inputs, satisfied the book's assertions, computed by the grader.

A check that must watch the answer's code *while it runs* (hooks on a model the check builds,
the random generators it restores, a mode that records torch calls, objects it changes in
place) splits its cell in two: a **probe**, ``def probe_<label>(...)`` before the ``with
check_exercise`` block, which runs the answer in the notebook on inputs the check passes and
returns plain data only (the evidence: outputs, gradients, hook records, flags), and the
**verdict**, the block's assertions on that data. The grader's run leaves the probe's ``def``
out (:func:`check_program`) and calls the notebook's probe through the bridge, so only its
data crosses, and computes the verdict here. What a probe can and cannot guarantee: its code
is the book's, and it runs after the answer, on a model it builds; but it runs in the
submission's process, so a submission that tampers with its own kernel (patches torch or the
chapter's functions, rewrites later cells) can make it return any data. The verdicts
therefore check that the data is consistent where the grader can tell cheaply (shapes, counts,
values recomputed here from the check's own inputs); evidence only the sandbox can see (that a
forward pass built no graph, which torch functions were called, how many backward passes ran)
is, in the end, the submission's report. :data:`SANDBOX_ONLY` lists the exercises still
graded by the sandbox's verdict alone, with the reason (none now); the summary says so for
those (see the README's instructor section).
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import io
import pathlib
import sys
from collections import OrderedDict
from pathlib import Path

# What the grader reads from the book, and the code it installs in the sandbox, have modules of
# their own; their names stay importable from here.
from tools.teach.check_cells import PROBE_PREFIX as PROBE_PREFIX
from tools.teach.check_cells import book_check_cells as book_check_cells
from tools.teach.check_cells import book_imports as book_imports
from tools.teach.check_cells import check_program as check_program
from tools.teach.sandbox import SANDBOX_CODE as SANDBOX_CODE

# Exercises the grader cannot re-check outside the submission's process, and why (label ->
# reason). The student-edition test proves the rest: every solution passes the grader's own run
# of its check. Empty since every check that watches the answer runs it in a probe.
SANDBOX_ONLY: dict[str, str] = {}

MARK = "__book_grader__"  # the key of an encoded non-plain value


class CannotCross(Exception):  # noqa: N818 (the learner reads its message as the hint)
    """A value the check needs cannot be checked outside the learner's notebook."""


# ---------------------------------------------------------------------------------------------
# The grader's side


class Bridge:
    """Asks the sandbox kernel for values, and to call its objects; reads every answer as data.

    ``run_code`` executes a code cell in the kernel and returns the error it raised, if any.
    """

    def __init__(self, run_code, folder: Path) -> None:
        self.run_code, self.folder, self.count = run_code, folder, 0

    def install(self) -> None:
        if (error := self.run_code(SANDBOX_CODE)) is not None:
            raise CannotCross(f"the grader could not reach your notebook ({error})")

    def request(self, op: str, target, *args, **kwargs):
        import torch

        self.count += 1
        request_path = self.folder / f"request-{self.count}.pt"
        response_path = self.folder / f"response-{self.count}.pt"
        torch.save({"op": op, "target": target, "args": encode_argument(list(args)),
                    "kwargs": encode_argument(kwargs), "grad": torch.is_grad_enabled()},
                   request_path)
        error = self.run_code(f"_book_grader.serve({str(request_path)!r}, "
                              f"{str(response_path)!r})")
        request_path.unlink(missing_ok=True)
        if error is not None or not response_path.exists():
            raise CannotCross("the grader could not read your answer from your notebook"
                              + (f" ({error})" if error else ""))
        try:
            response = torch.load(response_path, weights_only=True)
        except Exception as err:
            raise CannotCross(f"your answer could not be read as data ({type(err).__name__})"
                              ) from None
        finally:
            response_path.unlink(missing_ok=True)
        if type(response) is not dict:
            raise CannotCross("the grader's channel to your notebook returned no verdict")
        if "error" in response:
            raise _learner_error(response)
        return self.decode(response.get("ok"), what=op)

    def decode(self, value, what: str = "value", depth: int = 0):
        """A value the sandbox sent, rebuilt from plain types only; non-plain ones are
        :class:`Remote` (a reference to the object that stays in the sandbox)."""
        import torch

        kind = type(value)
        if depth > 60:
            raise CannotCross("your answer is nested too deeply to check")
        if kind in (type(None), bool, int, float, complex, str, bytes):
            return value
        if kind in (torch.Tensor, torch.nn.Parameter):
            return value
        if kind in (list, tuple):
            return kind(self.decode(v, what, depth + 1) for v in value)
        if kind in (dict, OrderedDict):
            if kind is dict and MARK in value:
                return self._decode_marked(value, what, depth)
            if not all(type(k) in (type(None), bool, int, float, str, bytes) for k in value):
                raise CannotCross("your answer holds a dict whose keys are not plain values")
            return kind((k, self.decode(v, what, depth + 1)) for k, v in value.items())
        raise CannotCross(f"your answer holds a {kind.__name__}, which the grader cannot read")

    def _decode_marked(self, value: dict, what: str, depth: int):
        import numpy as np
        import torch

        mark = value.get(MARK)
        try:
            if mark == "ref":
                return Remote(self, {MARK: "ref", "id": int(value["id"])},
                              str(value.get("type", "object")), what)
            if mark == "module":
                name = str(value["name"])
                module = sys.modules.get(name)
                if module is not None and _trusted_module(name):
                    return module
                return Remote(self, {MARK: "ref", "id": int(value["id"])}, f"module {name}",
                              what)
            if mark == "path":
                return pathlib.Path(str(value["path"]))
            if mark == "ndarray" and type(value["data"]) is torch.Tensor:
                return value["data"].numpy()
            if mark == "npscalar":
                return np.dtype(str(value["dtype"])).type(value["value"])
            if mark == "dtype" and isinstance(getattr(torch, str(value["name"]), None),
                                              torch.dtype):
                return getattr(torch, str(value["name"]))
            if mark == "device":
                return torch.device(str(value["name"]))
            if mark == "size":
                return torch.Size([int(v) for v in value["items"]])
            if mark in ("set", "frozenset"):
                items = [self.decode(v, what, depth + 1) for v in value["items"]]
                return (set if mark == "set" else frozenset)(items)
            if mark == "range":
                return range(*[int(v) for v in value["args"]])
        except CannotCross:
            raise
        except Exception as err:
            raise CannotCross(f"part of your answer could not be read ({err})") from None
        raise CannotCross("part of your answer could not be read")


def _trusted_module(name: str) -> bool:
    top = name.split(".")[0]
    return top in {"torch", "numpy", "helpers", "math", "random", "json", "copy", "pathlib",
                   "collections", "itertools", "functools", "statistics", "tempfile", "shutil",
                   "os", "sys", "time", "re", "torchvision", "dataclasses", "typing"}


def _learner_error(response: dict) -> Exception:
    """The exception the learner's code raised in the sandbox, as a builtin exception here."""
    names = response.get("error") or []
    message = str(response.get("message", ""))
    for name in names if type(names) is list else []:
        kind = getattr(builtins, str(name), None)
        if isinstance(kind, type) and issubclass(kind, Exception) and \
                kind.__module__ == "builtins":
            try:
                return kind(message)
            except Exception:  # an exception whose constructor wants more
                return RuntimeError(message)
    first = names[0] if type(names) is list and names else "an error"
    return RuntimeError(f"your code raised {first}: {message}")


def encode_argument(value, depth: int = 0):
    """What the check passes to the learner's code: data, remotes and generators only."""
    import numpy as np
    import torch

    kind = type(value)
    if depth > 40:
        raise CannotCross("the check's argument is nested too deeply to send")
    if kind in (type(None), bool, int, float, complex, str, bytes):
        return value
    if kind in (torch.Tensor, torch.nn.Parameter):
        if value.grad_fn is not None:
            copy = value.detach().clone()
            return copy.requires_grad_(True) if copy.is_floating_point() else copy
        return value
    if isinstance(value, Remote):
        return object.__getattribute__(value, "_ref")
    if kind is torch.Generator:
        return {MARK: "generator", "state": value.get_state(), "device": str(value.device)}
    if kind is torch.device:  # e.g. model.to(device) on a model in the notebook
        return {MARK: "device", "name": str(value)}
    if kind is torch.dtype:
        return {MARK: "dtype", "name": str(value).split(".")[-1]}
    if kind in (list, tuple):
        return kind(encode_argument(v, depth + 1) for v in value)
    if kind in (dict, OrderedDict):
        return kind((k, encode_argument(v, depth + 1)) for k, v in value.items())
    if kind in (pathlib.PosixPath, pathlib.WindowsPath):
        return {MARK: "path", "path": str(value)}
    if kind is np.ndarray:
        return {MARK: "ndarray", "data": torch.from_numpy(value.copy())}
    if kind is range:
        return {MARK: "range", "args": [value.start, value.stop, value.step]}
    raise CannotCross(f"the check passes a {kind.__name__} to your code, which the grader "
                      "cannot send into your notebook")


class Remote:
    """An object that stays in the sandbox. The check may call it, index it, iterate over it,
    take its length and read its attributes; each is done in the sandbox and answered as
    data. Comparing it, testing its truth, hashing or copying it would need its own code to
    decide here, so those raise :class:`CannotCross` (the check fails with that hint)."""

    __slots__ = ("_bridge", "_ref", "_type", "_what")

    def __init__(self, bridge: Bridge, ref, type_name: str, what: str) -> None:
        object.__setattr__(self, "_bridge", bridge)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_type", type_name)
        object.__setattr__(self, "_what", what)

    def _ask(self, op, *args, **kwargs):
        return object.__getattribute__(self, "_bridge").request(
            op, object.__getattribute__(self, "_ref"), *args, **kwargs)

    def _refuse(self, doing: str):
        kind = object.__getattribute__(self, "_type")
        raise CannotCross(
            f"the check needs {doing} a {kind} object, but only plain values (numbers, "
            f"strings, lists, dicts, tensors, NumPy arrays) can be checked outside your "
            f"notebook: give the answer as such a value")

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._ask("getattr", name)

    def __setattr__(self, name, value):
        self._refuse("to change")

    def __call__(self, *args, **kwargs):
        return self._ask("call", *args, **kwargs)

    def __getitem__(self, key):
        return self._ask("getitem", key)

    def __len__(self) -> int:
        n = self._ask("len")
        if type(n) is not int:
            raise CannotCross("len() of your object did not give an int")
        return n

    def __iter__(self):
        iterator = self._ask("iter")
        if not isinstance(iterator, Remote):
            yield from iterator
            return
        while True:
            chunk = iterator._ask("next", 256)
            if type(chunk) is not list:
                raise CannotCross("iterating over your object did not give values")
            yield from chunk
            if len(chunk) < 256:
                return

    def __eq__(self, other):
        self._refuse("to compare")

    def __ne__(self, other):
        self._refuse("to compare")

    __lt__ = __le__ = __gt__ = __ge__ = __eq__

    def __bool__(self):
        self._refuse("the truth of")

    def __hash__(self):
        self._refuse("to hash")

    def __copy__(self):
        self._refuse("to copy")

    def __deepcopy__(self, memo):
        self._refuse("to copy")

    def __reduce_ex__(self, protocol):
        self._refuse("to copy")

    def __index__(self):
        self._refuse("a number from")

    __int__ = __float__ = __complex__ = __index__

    def __contains__(self, item):
        self._refuse("to search")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kind = next((object.__getattribute__(a, "_type") for a in (*args, *(kwargs or {}).values())
                     if isinstance(a, Remote)), "non-tensor")
        raise CannotCross(f"the check passes your {kind} object to torch.{func.__name__}, "
                          "which takes tensors: give the answer as a plain torch.Tensor")

    def __repr__(self) -> str:
        return f"<{object.__getattribute__(self, '_type')} object in your notebook>"


class BookCheck:
    """One exercise's check as the book has it, ready to re-run on a submission's answer."""

    def __init__(self, label: str, source: str, imports: dict[str, tuple[str, str | None]]):
        self.label, self.source = label, source
        self.program, self.reads = check_program(source, label)
        self.imports = {n: imports[n] for n in self.reads if n in imports}
        self.code = compile(self.program, f"<the book's check of {label}>", "exec")

    def preload(self) -> None:
        """Import what the check uses now, before any submission code runs."""
        for module, _ in self.imports.values():
            try:
                importlib.import_module(module)
            except Exception:  # not importable here: resolved (and failing) at check time
                pass

    def namespace(self, bridge: Bridge) -> dict:
        from helpers.exercises import check_exercise

        ns: dict = {"__name__": "__book_check__", "__builtins__": builtins}
        for name in self.reads:
            if name in self.imports:
                module, attribute = self.imports[name]
                value = importlib.import_module(module)
                ns[name] = value if attribute is None else _attribute(value, module, attribute)
            else:
                try:
                    ns[name] = bridge.request("get", name)
                except NameError:
                    pass  # undefined in the notebook: the check's NameError is the hint
        ns["check_exercise"] = check_exercise
        return ns


def _attribute(module, module_name: str, attribute: str):
    try:
        return getattr(module, attribute)
    except AttributeError:  # `from package import submodule`
        return importlib.import_module(f"{module_name}.{attribute}")


def run_book_check(check: BookCheck, bridge: Bridge, workdir: Path) -> tuple[str, str]:
    """(status, message) of the book's check of one exercise, run here on the answer's data.

    The log variable is unset and stdout captured while it runs: the verdict is the
    ``ExerciseResult`` that this process's own ``check_exercise`` returned.
    """
    import os

    from helpers import exercises

    results: list = []
    real = exercises.check_exercise

    def recording(label):
        manager = real(label)
        return _Recorder(manager, results)

    old_log = os.environ.pop(exercises.EXERCISES_LOG_ENV_VAR, None)
    old_cwd = Path.cwd()
    try:
        bridge.install()
        ns = check.namespace(bridge)
        ns["check_exercise"] = recording
        os.chdir(workdir)  # the check's relative paths are the notebook's
        with contextlib.redirect_stdout(io.StringIO()):
            exec(check.code, ns)  # noqa: S102 (the book's own code, from the book)
    except CannotCross as err:
        if not results:
            return "failed", f"not yet: {err}"
    except Exception as err:  # the check's assertion, recorded by check_exercise below
        if not results:
            return "failed", f"the grader's run of the check raised {type(err).__name__}: {err}"
    finally:
        os.chdir(old_cwd)
        if old_log is not None:
            os.environ[exercises.EXERCISES_LOG_ENV_VAR] = old_log
    result = next((r for r in results if r.label == check.label), None)
    if result is None or not result.status:
        return "failed", "the grader's run of the check reported nothing"
    return result.status, result.message


class _Recorder:
    def __init__(self, manager, results: list) -> None:
        self.manager, self.results = manager, results

    def __enter__(self):
        result = self.manager.__enter__()
        self.results.append(result)
        return result

    def __exit__(self, *exc):
        return self.manager.__exit__(*exc)


def book_checks(chapter: Path) -> dict[str, BookCheck]:
    """Every exercise's :class:`BookCheck` of ``chapter`` (the book's, never a submission's)."""
    imports = book_imports(chapter)
    return {label: BookCheck(label, source, imports)
            for label, source in book_check_cells(chapter).items()}
