"""Where a Triton error lies in the user's source.

Under the interpreter the kernel runs as Python, and its error comes wrapped in InterpreterErrors
raised at the launch: the innermost error's frames hold the kernel's line. Compiling, Triton raises
``CompilationError`` from ``compile``, with the code generator's frames filtered out of the
traceback: the deepest frame left is the launch. The error carries the kernel's source and the AST
node at fault (its line counted from the ``def``), and a call into another ``@triton.jit`` function
wraps the callee's error (``__cause__``) in one at the call. The innermost error whose kernel can be
found says where the fault is."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path


def _chain(exc: BaseException) -> list:
    """``exc`` and what it wraps, outermost first."""
    chain = []
    while exc is not None and all(exc is not e for e in chain):
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def _errors(exc: BaseException, kind: str = "CompilationError") -> list:
    """The Triton errors of ``kind`` (CompilationError, InterpreterError) in ``exc``'s chain,
    outermost first."""
    if "triton" not in sys.modules:
        return []
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import InterpreterError

    cls = {"CompilationError": CompilationError, "InterpreterError": InterpreterError}[kind]
    return [e for e in _chain(exc) if isinstance(e, cls)]


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def _interpreted_site(exc: BaseException) -> tuple[str, Path, int] | None:
    """(message, file, line) of the error an interpreted kernel raised: the innermost error of the
    chain and the deepest frame outside Triton of the innermost error that has one."""
    if not _errors(exc, "InterpreterError"):
        return None
    import triton

    package = Path(triton.__file__).resolve().parent
    chain = _chain(exc)
    for err in reversed(chain):
        frames = [f for f in traceback.extract_tb(err.__traceback__)
                  if not Path(f.filename).resolve().is_relative_to(package)]
        if frames:
            return _message(chain[-1]), Path(frames[-1].filename), frames[-1].lineno
    return None


def _jit_functions(exc: BaseException) -> list:
    """The ``@triton.jit`` functions reachable from the globals of ``exc``'s frames (the launch's
    module) and from those functions' own globals (the helpers they call)."""
    spaces = [frame.f_globals for frame, _ in traceback.walk_tb(exc.__traceback__)]
    seen, found = set(), []
    while spaces:
        space = spaces.pop()
        if id(space) in seen:
            continue
        seen.add(id(space))
        for value in list(space.values()):
            while value is not None and not hasattr(value, "raw_src") and hasattr(value, "fn"):
                value = value.fn  # an Autotuner or Heuristics around the JIT function
            if hasattr(value, "raw_src") and hasattr(value, "starting_line_number") and value not in found:
                found.append(value)
                spaces.append(getattr(value.fn, "__globals__", {}))
    return found


def triton_site(exc: BaseException) -> tuple[str, Path, int] | None:
    """(message, file, line) of the Triton error in ``exc``'s chain: for a compilation error, the
    innermost one whose ``@triton.jit`` function is found, its line in that function's file, and the
    message of what it wraps; for an interpreted kernel's, the kernel's frame. None where ``exc``
    holds no Triton error."""
    errors = _errors(exc)
    if not errors:
        return _interpreted_site(exc)
    jits = _jit_functions(exc)
    for err in reversed(errors):
        node_line = getattr(err.node, "lineno", None)
        jit = next((j for j in jits if getattr(j, "src", None) == err.src), None)
        if jit is None or node_line is None:
            continue
        def_at = next((i for i, line in enumerate(jit.raw_src) if line.strip().startswith("def ")), 0)
        line = jit.starting_line_number + def_at + node_line - 1
        cause = err.__cause__ or err.__context__
        if cause is not None and not _errors(cause):
            message = _message(cause)
        elif err.error_message:
            message = f"{type(err).__name__}: {err.error_message.strip().splitlines()[0]}"
        else:
            message = type(err).__name__
        return message, Path(jit.fn.__code__.co_filename), line
    return None
