"""The README's Python examples run as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the examples write index.db into the working directory
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})


def test_readme_starts_with_the_two_commands():
    first_block = re.search(r"```bash\n(.*?)```", README.read_text(), flags=re.S).group(1)
    lines = [line for line in first_block.splitlines() if line.strip()]
    assert len(lines) == 2
    assert "pytest" in lines[1]
