"""A file that does not parse (`scan.unparsed`): NM001, and the CUDA words its tokens hold."""

from __future__ import annotations

from pathlib import Path

from neuron_migrate.ruleset.load import load_pack
from neuron_migrate.scan.engine import scan_paths

PACK = load_pack()

# tacotron2's old utils.py: `async` became a keyword in Python 3.7, so the file no longer parses.
OLD_CODE = '''\
import torch


def get_mask_from_lengths(lengths):
    """Builds the mask on CUDA."""
    max_len = torch.max(lengths).item()
    ids = torch.arange(0, max_len, out=torch.cuda.LongTensor(max_len))
    return (ids < lengths.unsqueeze(1)).byte()


def to_gpu(x):
    # moves x to cuda
    print("moving to cuda")
    logger.info("cuda %s", x)
    if torch.cuda.is_available():
        x = x.contiguous().cuda(async=True)
    return x, "cuda:0", "a short note on cuda"
'''


def found(root: Path) -> list[tuple[int, str, str]]:
    result = scan_paths([root], PACK, use_cache=False, jobs=1)
    return sorted((f.span.line, f.code, "" if f.code == "NM001" else f.symbol) for fr in result.files for f in fr.findings)


def test_a_file_that_does_not_parse_still_has_its_cuda_words_reported(tmp_path: Path) -> None:
    (tmp_path / "utils.py").write_text(OLD_CODE)
    assert found(tmp_path) == [
        (7, "NM290", "cuda"),
        (15, "NM290", "cuda"),
        (16, "NM001", ""),
        (16, "NM290", "cuda"),
        (17, "NM290", '"cuda:0"'),
    ]  # the docstring, the comment, the printed and logged text and a sentence stay silent


def test_a_python_2_file_and_an_unclosed_bracket(tmp_path: Path) -> None:
    (tmp_path / "py2.py").write_text('import torch\nprint "using cuda"\nmodel = model.cuda()\n')
    (tmp_path / "cut.py").write_text("import torch\nx = torch.zeros(3,\ny = x.cuda()\n")
    assert found(tmp_path) == [(2, "NM001", ""), (2, "NM001", ""), (3, "NM290", "cuda"), (3, "NM290", "cuda")]
