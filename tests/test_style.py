"""The code passes the ruff configuration in pyproject.toml (pycodestyle, pyflakes, bugbear,
pyupgrade and import order; the ignored rules say why there). ruff is in the test extra."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_ruff_finds_nothing():
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


# --- no function over 60 lines of code -------------------------------------------------------------
MAX_CODE_LINES = 60
PACKAGES = ("autodiff", "optimizers", "hessopt")


def code_lines(source: str) -> dict[str, int]:
    """{"name (line n)": the lines of code of each function's body} in ``source``: lines that hold a
    token other than a comment, the body's docstring left out (a nested function's lines count
    for the function that holds it too)."""
    import ast
    import io
    import tokenize

    lines = {line for token in tokenize.generate_tokens(io.StringIO(source).readline)
             if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                   tokenize.DEDENT, tokenize.ENDMARKER)
             for line in range(token.start[0], token.end[0] + 1)}
    counts = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            docstring = set()
            if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                docstring = set(range(body[0].lineno, body[0].end_lineno + 1))
            counts[f"{node.name} (line {node.lineno})"] = sum(
                1 for line in range(body[0].lineno, node.end_lineno + 1) if line in lines and line not in docstring)
    return counts


def test_code_lines_count_the_body_without_docstring_comments_and_blank_lines():
    source = ('def f(x):\n    """Doc.\n\n    More doc.\n    """\n    # a comment\n\n    y = (x +\n'
              '         1)  # trailing\n    return y\n\n\ndef g():\n    """Only a docstring."""\n')
    assert code_lines(source) == {"f (line 1)": 3, "g (line 13)": 0}


def test_no_function_has_more_than_60_lines_of_code():
    too_long = [f"{path.relative_to(ROOT)}: {name}: {count}"
                for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
                for name, count in code_lines(path.read_text()).items() if count > MAX_CODE_LINES]
    assert too_long == [], "functions over 60 lines of code:\n" + "\n".join(too_long)
