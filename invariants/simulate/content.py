"""What the simulated sessions carry: the harness's tool definitions, its system prompt and a skills catalog."""

from __future__ import annotations

from invariants.simulate.recorder import ToolCall, text_content


def _tool(name: str, description: str, props: dict, required: list) -> dict:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": props, "required": required},
    }


def _string(description: str) -> dict:
    return {"type": "string", "description": description}


BASH = _tool(
    "bash",
    "Run a command with `bash -c` and return its output. A non-zero exit is shown as `[exit code: N]`.",
    {
        "command": _string("The command line to run."),
        "description": _string("Five to ten words on what the command does."),
    },
    ["command", "description"],
)
READ = _tool(
    "read",
    "Read a UTF-8 text file; lines come back numbered.",
    {
        "file_path": _string("Path of the file to read."),
        "offset": {"type": "number", "description": "First line to return, 1-based."},
        "limit": {"type": "number", "description": "How many lines to return."},
    },
    ["file_path"],
)
WRITE = _tool(
    "write",
    "Create a file or replace all of its content.",
    {"file_path": _string("Path of the file to write."), "content": _string("The full new content.")},
    ["file_path", "content"],
)
EDIT = _tool(
    "edit",
    "Replace one literal piece of text in an existing file.",
    {
        "file_path": _string("Path of the file to edit."),
        "old_string": _string("Exact text to replace."),
        "new_string": _string("Text to put in its place."),
    },
    ["file_path", "old_string", "new_string"],
)
GREP = _tool(
    "grep",
    "Search files for a regular expression and list the matching lines.",
    {"pattern": _string("The regular expression."), "path": _string("Directory to search.")},
    ["pattern"],
)
SKILL = _tool(
    "skill",
    "Load the full instructions of a skill listed in the session's skill catalog.",
    {"name": _string("The skill's exact name.")},
    ["name"],
)
SUBAGENT_FORK = _tool(
    "subagent_fork",
    "Hand a task to a child agent that starts from this conversation's "
    "finished turns; only its final answer comes back.",
    {"description": _string("Three to five words for display."), "prompt": _string("What the child should do.")},
    ["description", "prompt"],
)

CWD = "/home/dev/project"
SYSTEM = "\n".join(
    [
        "You are an AI agent powered by the DeepSeek Harness SDK.",
        "",
        f"You are a coding assistant. Your working directory is {CWD}.",
        "",
        "Check your changes by running the code or its tests. Answer briefly and stick to facts.",
        "",
        "Prefer the read tool over shell commands such as cat when you look at text files.",
        "",
        "Every bash result ends with an [exit code: N] marker; look into failures before moving on.",
    ]
)
MOCK_SYSTEM = "You are an AI agent powered by the DeepSeek Harness SDK.\n\nsimulated persona"


def skills_prefix(skills: list[tuple[str, str]]) -> list:
    """A session prefix like the skills catalog the harness composes."""
    lines = [
        "<system-reminder>",
        "Skills are reusable task instructions. This session can load:",
        "",
        "<available_skills>",
        *[f"- `{n}`: {d}" for n, d in skills],
        "</available_skills>",
        "",
        "Call the `skill` tool with the exact name before acting on a task that matches a skill.",
        "</system-reminder>",
    ]
    return [{"role": "user", "content": text_content("\n".join(lines))}]


def _bash(command: str, description: str, output: str, code: int = 0) -> ToolCall:
    return ToolCall(
        "bash", {"command": command, "description": description}, f"{output}[exit code: {code}]", is_error=code != 0
    )
