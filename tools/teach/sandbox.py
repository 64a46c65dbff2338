"""The sandbox's side of the grader's bridge (issue 34): the code the grader installs in the
learner's kernel before it re-runs a check there (tools/teach/trusted_check.py, ``Bridge``).

It is a string, run in the kernel, not imported here: it serves the grader's requests (get a
name, call an object, read an attribute or item, iterate) and sends back every result as data
(tensors and plain values) or as a reference to an object that stays in the kernel.
"""

# Installed in the kernel before each check the grader re-runs. It runs in the submission's
# process, so nothing it sends is trusted: it is only ever read as data.
SANDBOX_CODE = r'''
def _book_grader_install():
    import builtins, pathlib, types, collections
    import torch
    try:
        import numpy as np
    except ImportError:
        np = None
    MARK = "__book_grader__"
    refs = {}
    plain = (type(None), bool, int, float, complex, str, bytes)

    def ref(x):
        refs[id(x)] = x
        kind = type(x)
        return {MARK: "ref", "id": id(x), "type": f"{kind.__module__}.{kind.__qualname__}"}

    def encode(x, depth=0):
        kind = type(x)
        if kind in plain:
            return x
        if depth > 40:
            return ref(x)
        if kind in (torch.Tensor, torch.nn.Parameter):
            if x.grad_fn is not None:  # a result of autograd: its values, and the flag
                y = x.detach().clone()
                return y.requires_grad_(True) if y.is_floating_point() else y
            return x
        if kind is torch.dtype:
            return {MARK: "dtype", "name": str(x).split(".")[-1]}
        if kind is torch.device:
            return {MARK: "device", "name": str(x)}
        if kind is torch.Size:
            return {MARK: "size", "items": list(x)}
        if kind in (list, tuple):
            return kind(encode(v, depth + 1) for v in x)
        if kind in (set, frozenset):
            return {MARK: kind.__name__, "items": [encode(v, depth + 1) for v in x]}
        if kind in (dict, collections.OrderedDict) and all(type(k) in plain for k in x):
            return kind((k, encode(v, depth + 1)) for k, v in x.items())
        if kind in (pathlib.PosixPath, pathlib.WindowsPath, pathlib.PurePosixPath):
            return {MARK: "path", "path": str(x)}
        if kind is range:
            return {MARK: "range", "args": [x.start, x.stop, x.step]}
        if np is not None and kind is np.ndarray and x.dtype.kind in "biufc":
            return {MARK: "ndarray", "data": torch.from_numpy(x.copy())}
        if np is not None and isinstance(x, np.generic) and kind.__module__ == "numpy" \
                and x.dtype.kind in "biufc":
            return {MARK: "npscalar", "dtype": x.dtype.str, "value": x.item()}
        if isinstance(x, types.ModuleType):
            return {**ref(x), MARK: "module", "name": x.__name__}
        return ref(x)

    def decode(x):
        kind = type(x)
        if kind in (list, tuple):
            return kind(decode(v) for v in x)
        if kind is dict and MARK in x:
            what = x[MARK]
            if what == "ref":
                return refs[x["id"]]
            if what == "global":
                return globals()[x["name"]]
            if what == "generator":
                g = torch.Generator(device=x["device"])
                g.set_state(x["state"])
                return g
            if what == "path":
                return pathlib.Path(x["path"])
            if what == "ndarray":
                return x["data"].numpy()
            return {"dtype": lambda: getattr(torch, x["name"]),
                    "device": lambda: torch.device(x["name"]),
                    "size": lambda: torch.Size(x["items"]),
                    "set": lambda: set(decode(x["items"])),
                    "frozenset": lambda: frozenset(decode(x["items"])),
                    "range": lambda: range(*x["args"])}[what]()
        if kind in (dict, collections.OrderedDict):
            return kind((k, decode(v)) for k, v in x.items())
        return x

    def serve(request_path, response_path):
        try:
            request = torch.load(request_path, weights_only=False)
            op, target = request["op"], decode(request["target"])
            args, kwargs = decode(request["args"]), decode(request["kwargs"])
            with torch.set_grad_enabled(request["grad"]):
                if op == "get":
                    if target not in globals():
                        raise NameError(f"name {target!r} is not defined")
                    result = globals()[target]
                elif op == "call":
                    result = target(*args, **kwargs)
                elif op == "getattr":
                    result = getattr(target, args[0])
                elif op == "getitem":
                    result = target[args[0]]
                elif op == "len":
                    result = len(target)
                elif op == "iter":
                    result = iter(target)
                elif op == "next":  # up to args[0] items at once; fewer at the end
                    result = []
                    for _ in range(args[0]):
                        try:
                            result.append(next(target))
                        except StopIteration:
                            break
                else:
                    raise ValueError(op)
            response = {"ok": encode(result)}
        except BaseException as err:  # what the learner's code raised goes back as data
            response = {"error": [k.__name__ for k in type(err).__mro__], "message": str(err)}
        torch.save(response, response_path)

    return types.SimpleNamespace(serve=serve, refs=refs)


_book_grader = _book_grader_install()
del _book_grader_install
'''
