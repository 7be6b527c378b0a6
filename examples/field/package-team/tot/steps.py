"""The conversation's steps."""

TASK_FILE = "tot/prompts/task.txt"  # relative to the team folder, where the program is run from


def first_step(letter: str) -> list[dict[str, str]]:
    with open(TASK_FILE, encoding="utf-8") as handle:
        task = handle.read()
    return [{"role": "user", "content": task.replace("<OBJECT>", letter)}]
