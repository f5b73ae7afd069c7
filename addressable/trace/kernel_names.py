"""Split a GPU kernel name into its qualified name, template arguments and parameter list.

Profilers spell one kernel many ways: Kineto and Nsight print the demangled signature
(`void ns::f<float, false>(int)`, with `std::enable_if<…>::type` or no return type at all),
CUPTI sometimes leaves the Itanium-mangled symbol (`_ZN2ns1fIfLb0EEEvi`, often cut short),
HIP adds ` [clone .kd]`, and library kernels are often bare names (`nvjet_sm90_…`,
`Cijk_Ailk_Bljk_…`). Taxonomy rules match the qualified name (`ns::f`), so a word inside a
template argument (`flashinfer::…`, `cutlass::bfloat16_t`) or a parameter type cannot claim
a kernel unless a rule asks to look there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

try:  # libstdc++'s own demangler through ctypes; names it rejects (often truncated) use the fallback
    import cxxfilt
except ImportError:  # pragma: no cover - cxxfilt is a declared dependency
    cxxfilt = None

_OPEN, _CLOSE = "<({[", ">)}]"
_HIP_SUFFIX = re.compile(r"(\s*\[clone [^\]]*\])+$|\.kd$")
_RETURN_TYPES = frozenset({"void", "int", "unsigned", "float", "double", "bool", "char", "long", "__global__"})
_SOURCE_NAME = re.compile(r"(\d+)")


@dataclass(frozen=True)
class KernelName:
    """One kernel name, split: `qualified` keeps namespaces, `template` and `params` are the raw inner text."""

    raw: str
    qualified: str
    template: str
    params: str


@lru_cache(maxsize=65536)
def parse_kernel_name(name: str) -> KernelName:
    """Parse one kernel name (any spelling); never raises, an unparseable name is its own qualified name."""
    text = _HIP_SUFFIX.sub("", name.strip())
    if text.startswith("_Z"):
        text = demangle(text)
    func, params = _split_params(text)
    qualified, template = _split_template(_drop_return_type(func))
    cut = _open_paren(qualified)
    if cut >= 0:  # a name cut short inside its parameter list: "f<T>(int, c10::BFl..."
        qualified, params = qualified[:cut].rstrip(), params or qualified[cut + 1 :]
    return KernelName(name, qualified or text, template, params)


def _open_paren(text: str) -> int:
    """Position of the first `(` that does not open `(anonymous namespace)`, or -1."""
    i = text.find("(")
    while i >= 0 and text.startswith("(anonymous namespace)", i):
        i = text.find("(", i + 1)
    return i


def demangle(symbol: str) -> str:
    """Demangle an Itanium C++ symbol; a truncated or unknown one keeps its nested name and raw template text."""
    if cxxfilt is not None:
        try:
            return cxxfilt.demangle(symbol)
        except cxxfilt.Error:
            pass
    return _demangle_prefix(symbol)


def _demangle_prefix(symbol: str) -> str:
    """The `<len><id>` parts of a mangled nested name (`_ZN5flash3fwdI…` -> `flash::fwd<…>`)."""
    i = 2
    if symbol[i : i + 1] == "N":
        i += 1
    while symbol[i : i + 1] in ("K", "V", "r"):  # cv-qualifiers of a member function
        i += 1
    parts = []
    if symbol.startswith("St", i):
        parts.append("std")
        i += 2
    while (m := _SOURCE_NAME.match(symbol, i)) is not None:
        n = int(m.group(1))
        start = m.end()
        parts.append(symbol[start : start + n])
        i = start + n
    if not parts:
        return symbol
    rest = symbol[i:]
    qualified = "::".join(parts)
    return f"{qualified}<{rest[1:]}>" if rest.startswith("I") else qualified


def _split_params(text: str) -> tuple[str, str]:
    """(function part, parameter list) where the name ends in a top-level `(…)` that is not `(anonymous namespace)`."""
    end = len(text.rstrip())
    tail = text[:end]
    for suffix in (" const", " volatile"):
        tail = tail.removesuffix(suffix)
    if not tail.endswith(")"):
        return text, ""
    depth = 0
    for i in range(len(tail) - 1, -1, -1):
        c = tail[i]
        if c == ">" and tail[i - 1 : i] == "-":  # "->" in "Memcpy DtoD (Device -> Device)"
            continue
        if c in _CLOSE:
            depth += 1
        elif c in _OPEN:
            depth -= 1
            if depth == 0:
                if c != "(" or tail[i + 1 : -1] == "anonymous namespace" or i == 0:
                    return text, ""
                return tail[:i].rstrip(), tail[i + 1 : -1]
    return text, ""  # unbalanced: keep the whole name


def _top_level_spaces(text: str) -> list[int]:
    depth, out = 0, []
    for i, c in enumerate(text):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(depth - 1, 0)
        elif c == " " and depth == 0:
            out.append(i)
    return out


def _drop_return_type(func: str) -> str:
    """`void f<…>` -> `f<…>`; `std::enable_if<…>::type f<…>` -> `f<…>`; `Memcpy DtoD` stays."""
    spaces = _top_level_spaces(func)
    if not spaces:
        return func
    first = func[: spaces[0]]
    if first in _RETURN_TYPES or first.endswith("::type") or first.endswith("*"):
        return func[spaces[0] + 1 :].strip()
    return func


def _split_template(func: str) -> tuple[str, str]:
    """Remove every top-level `<…>` group from the function part: (qualified name, their contents)."""
    depth, start, name, args = 0, 0, [], []
    for i, c in enumerate(func):
        if c == "<" and not _is_operator(func, i):
            if depth == 0:
                name.append(func[start:i])
                start = i + 1
            depth += 1
        elif c == ">" and depth > 0 and not (i > 0 and func[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                args.append(func[start:i])
                start = i + 1
    if depth:  # unbalanced (a truncated name): the rest is template text
        args.append(func[start:])
    else:
        name.append(func[start:])
    return "".join(name).strip(), ", ".join(a.strip() for a in args)


def _is_operator(text: str, i: int) -> bool:
    """`operator<`, `operator<<` and `operator<=` are names, not template brackets."""
    return text[max(0, i - 8) : i].endswith("operator") or text[max(0, i - 9) : i].endswith("operator<")


def template_args(template: str) -> list[str]:
    """Split template-argument text at its top-level commas."""
    depth, start, out = 0, 0, []
    for i, c in enumerate(template):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth = max(depth - 1, 0)
        elif c == "," and depth == 0:
            out.append(template[start:i].strip())
            start = i + 1
    out.append(template[start:].strip())
    return [a for a in out if a]


# ---------------------------------------------------------------- names that fit a column

_QUALIFIER = re.compile(r"\(anonymous namespace\)::|\b[A-Za-z_]\w*::(?!\{)")
_CALL_OPERATOR = re.compile(r"::operator\(\)\(\)(\s*const)?")


def compact(text: str) -> str:
    """Template or parameter text without namespaces, lambdas and inner call signatures:
    `at::native::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}, std::array<char*, 2ul> >`
    -> `silu_kernel, array<char*, 2ul>>`."""
    text = _CALL_OPERATOR.sub("", text.replace("(anonymous namespace)", "\0"))
    out, depth = [], 0
    for c in text:  # drop every (...) and {...} group (an inner function's signature, a lambda)
        if c in "({":
            depth += 1
        elif c in ")}" and depth:
            depth -= 1
        elif not depth:
            out.append(c)
    text = re.sub(r"(::)+(?=[,>\s]|$)", "", "".join(out))  # `f(...)::{lambda}` leaves `f::`
    text = _QUALIFIER.sub("", text.replace("\0", "(anonymous namespace)"))
    text = re.sub(r"\s+const\b", "", text)
    while "> >" in text:
        text = text.replace("> >", ">>")
    return re.sub(r"\s+", " ", text).strip()


def display_name(name: str, params: bool = False) -> tuple[str, int]:
    """The kernel's own name first, then its template arguments (and with `params`, its parameters),
    namespaces left out: `void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<
    c10::BFloat16>, std::array<char*, 3ul> >(…)` -> `vectorized_elementwise_kernel<8, CUDAFunctor_add<BFloat16>,
    array<char*, 3ul>>`. Returns the text and the length of the own name."""
    k = parse_kernel_name(name)
    own = _QUALIFIER.sub("", k.qualified).strip() or k.qualified
    text = own + (f"<{compact(k.template)}>" if k.template else "")
    if params and k.params:
        text += f"({compact(k.params)})"
    return text, len(own)


def short_names(names: list[str], width: int) -> list[str]:
    """Kernel names cut to `width` characters so that different kernels never look the same: display_name,
    with parameters where two kernels differ only there, then fit_distinct."""
    shown = [display_name(n) for n in names]
    for _, idx in collisions([t for t, _ in shown], names):
        for i in idx:
            shown[i] = display_name(names[i], params=True)
    return fit_distinct([t for t, _ in shown], width, [n for _, n in shown])


def collisions(texts: list[str], keys: list[str]) -> list[tuple[str, list[int]]]:
    """Groups of positions whose text is the same while their keys (e.g. the full names) differ."""
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        groups.setdefault(t, []).append(i)
    return [(t, idx) for t, idx in groups.items() if len({keys[i] for i in idx}) > 1]


def cut(text: str, width: int) -> str:
    """`text` cut to `width` characters, '…' marking the cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def fit_distinct(texts: list[str], width: int, keep: list[int] | None = None) -> list[str]:
    """Each text cut to `width` characters ('…' marks a cut) so that different texts stay different.

    A text whose plain cut would look like another's keeps its first `keep[i]` characters (at most half
    the width; a kernel's own name), then '…' and the part where it differs from the others; if two
    still look alike, a number in brackets ends each.
    """
    out = [cut(t, width) for t in texts]
    for _, idx in collisions(out, texts):
        for i in idx:
            others = [texts[j] for j in idx if texts[j] != texts[i]]
            at = max(_common_prefix(texts[i], o) for o in others)
            out[i] = _elide(texts[i], width, min(keep[i] if keep else width, width // 2), at)
    for _, idx in collisions(out, texts):
        for n, i in enumerate(idx, 1):
            out[i] = cut(texts[i], width - len(f" [{n}]")) + f" [{n}]"
    return out


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of two texts."""
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def _elide(text: str, width: int, head: int, at: int) -> str:
    """`text[:head]`, '…', then `text` from a little before position `at` (a word's start where one is near),
    within `width`."""
    room = width - head - 1
    lo = max(head, at - 12)
    words = [i for i in (text.rfind(d, lo, at - 1) + 1 for d in " <,_") if i >= lo and at - i <= room - 4]
    start = max(words) if words else max(head, at - min(12, room // 3))
    return cut(text[:head] + "…" + text[start:], width) if start > head else cut(text, width)
