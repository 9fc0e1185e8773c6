"""The README starts with the two commands (its Python runs in test_docs_snippets.py)."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_starts_with_the_two_commands():
    first_block = re.search(r"```bash\n(.*?)```", README.read_text(), flags=re.S).group(1)
    lines = [line for line in first_block.splitlines() if line.strip()]
    assert len(lines) == 2
    assert "pytest" in lines[1]
