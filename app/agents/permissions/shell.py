"""Reading a `bash` command for the permission rules (R-GUARD-1) with tree-sitter-bash, never a regex.

`read_command` splits a command line into the simple commands it runs (`git status && rm x` runs two), each as
its words with quotes and escapes removed (`'r'\\m -rf x` is `rm -rf x`), plus the files its redirections write
and read. Whatever cannot be vetted from the text alone makes the reading `opaque`, with the reason: an expansion
or substitution (`$HOME`, `$(…)`, backticks, `<(…)`), an environment prefix (`PAGER=… git log`), a declaration,
a control structure, a function, a heredoc that expands, or anything the parser reports as an error or that this
module does not know. An opaque command is never allowed by a rule (it is asked); its inner commands are still
read, so a deny rule sees `rm` inside `$(rm x)`.

tree-sitter is imported on the first call, so a daemon whose bash calls are never checked against a rule does not
load it (start-up time and idle memory unchanged).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["Redirect", "ShellReading", "read_command"]

# Containers whose commands all run as written: their operators (`&&`, `|`, `;`, `(`, …) are unnamed nodes.
_TRANSPARENT = frozenset({"program", "list", "pipeline", "subshell", "compound_statement", "negated_command"})
# Runs commands whose text is not the outer command's: read inside, but the whole is opaque.
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_STRING_ESCAPES = frozenset('\\"$`\n')


@dataclass(frozen=True, slots=True)
class Redirect:
    """A file a redirection touches: `write_file` for `>`, `>>`, `&>`, …; `read_file` for `<`."""

    tool: Literal["read_file", "write_file"]
    path: str


@dataclass(slots=True)
class ShellReading:
    commands: list[str] = field(default_factory=list)  # every simple command, words joined by one space
    redirects: list[Redirect] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)  # why it cannot be vetted; empty = fully read

    @property
    def readable(self) -> bool:
        return not self.opaque and bool(self.commands)


def read_command(command: str) -> ShellReading:
    reading = ShellReading()
    source = command.encode("utf-8", "surrogatepass")
    root = _parser().parse(source).root_node
    if root.has_error:
        reading.opaque.append("the shell parser could not read it")
    _Reader(reading, source).statement(root)
    if not reading.commands and not reading.opaque:
        reading.opaque.append("no command in it")
    return reading


@cache
def _parser() -> Parser:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


class _Reader:
    def __init__(self, reading: ShellReading, source: bytes) -> None:
        self.reading = reading
        self.source = source  # the command's bytes: node texts are slices of it (no copy per node)

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def opaque(self, reason: str, node: Node) -> None:
        self.reading.opaque.append(reason)
        self.inner(node)

    def inner(self, node: Node) -> None:
        """The commands inside a node that cannot be vetted, for deny rules only (the reading is opaque)."""
        for child in node.named_children:
            if child.type in ("command", "redirected_statement") or child.type in _TRANSPARENT:
                self.statement(child)
            else:
                self.inner(child)

    def statement(self, node: Node) -> None:
        kind = node.type
        if kind in _TRANSPARENT:
            for child in node.named_children:
                self.statement(child)
        elif kind == "command":
            self.command(node)
        elif kind == "redirected_statement":
            for child in node.named_children:
                if child.type.endswith("redirect"):
                    self.redirect(child)
                else:
                    self.statement(child)
        elif kind == "comment":
            return
        elif kind == "variable_assignment":
            self.opaque("a variable assignment", node)
        elif kind == "ERROR" or node.is_missing:
            self.opaque("the shell parser could not read it", node)
        else:
            self.opaque(f"a {kind.replace('_', ' ')}", node)

    def command(self, node: Node) -> None:
        # (start, end, value) of each word; None where it expands. Adjacent ones are one word to bash.
        words: list[tuple[int, int, str | None]] = []
        source = self.source
        for child in node.named_children:
            kind = child.type
            if kind == "variable_assignment":
                self.opaque("an environment prefix", child)
                continue
            if kind.endswith("redirect"):
                self.redirect(child)
                continue
            target = child
            if kind == "command_name":
                if child.named_child_count != 1:
                    self.opaque("a command name it cannot read", child)
                    continue
                target = child.named_children[0]
            value = self.word(target)
            if value is None:
                self.opaque(_why(target.type), target)
            start = child.start_byte
            if words and (words[-1][1] == start or _joined(source[words[-1][1] : start])):
                # tree-sitter splits `'r'\m` and `st\<newline>atus`, which bash reads as one word
                first, _, previous = words.pop()
                joined = None if previous is None or value is None else previous + value
                words.append((first, child.end_byte, joined))
            else:
                words.append((start, child.end_byte, value))
        if words:
            self.reading.commands.append(" ".join(w[2] if w[2] is not None else "\x00" for w in words))

    def redirect(self, node: Node) -> None:
        kind = node.type
        if kind == "heredoc_redirect":
            for child in node.named_children:
                if child.type == "heredoc_body" and child.named_child_count:
                    self.opaque("a heredoc that expands", child)
                elif child.type not in ("heredoc_start", "heredoc_body", "heredoc_end"):
                    self.opaque(f"a heredoc with {child.type.replace('_', ' ')}", child)
            return
        if kind == "herestring_redirect":
            for child in node.named_children:
                if self.word(child) is None:
                    self.opaque(_why(child.type), child)
            return
        if kind != "file_redirect":
            self.opaque(f"a {kind.replace('_', ' ')}", node)
            return
        operator = next((self.text(c) for c in node.children if not c.is_named), "")
        targets = [c for c in node.named_children if c.type != "file_descriptor"]
        if len(targets) != 1:
            self.opaque("a redirection it cannot read", node)
            return
        target = self.word(targets[0])
        if target is None:
            self.opaque(_why(targets[0].type), targets[0])
        elif operator in (">&", "<&", ">&-", "<&-") and (target.isdigit() or target == "-"):
            return  # duplicating or closing a descriptor (`2>&1`) touches no file
        elif operator.startswith("<") and operator != "<>":
            self.reading.redirects.append(Redirect("read_file", target))
        else:
            self.reading.redirects.append(Redirect("write_file", target))

    def word(self, node: Node) -> str | None:
        """The value of a word bash passes as written, or None when it expands into something else."""
        kind = node.type
        if kind == "word":
            return _unescape(self.text(node), None)
        if kind == "number":
            return self.text(node)
        if kind == "raw_string":
            return self.text(node)[1:-1]
        if kind == "string":
            parts = node.named_children
            if any(p.type != "string_content" for p in parts):
                return None
            return "".join(_unescape(self.text(p), _STRING_ESCAPES) for p in parts)
        if kind == "concatenation":
            values = [self.word(c) for c in node.named_children]
            return None if any(v is None for v in values) else "".join(v or "" for v in values)
        return None


def _why(kind: str) -> str:
    names: dict[str, Any] = {
        "command_substitution": "a command substitution",
        "process_substitution": "a process substitution",
        "simple_expansion": "a variable expansion",
        "expansion": "a parameter expansion",
        "arithmetic_expansion": "an arithmetic expansion",
        "string": "a string that expands",
    }
    return str(names.get(kind, f"a {kind.replace('_', ' ')}"))


def _joined(gap: bytes) -> bool:
    """Whether two words with `gap` between them are one word to bash: nothing, or line continuations only."""
    return gap.replace(b"\\\n", b"") == b""


def _unescape(text: str, escapable: frozenset[str] | None) -> str:
    """Backslash escapes removed: every `\\x` in a bare word, only the listed ones inside double quotes."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and (escapable is None or text[i + 1] in escapable):
            if text[i + 1] != "\n":  # a line continuation joins lines
                out.append(text[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)
