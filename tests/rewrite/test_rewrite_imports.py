"""Imports added where missing and removed only when unused, through apply_fixes_to_source."""

from __future__ import annotations

from rewrite_helpers import finding

from neuron_migrate.findings import Target
from neuron_migrate.rewrite.apply import ImportContext, apply_fixes_to_source
from neuron_migrate.rewrite.imports import add_missing_imports, remove_unused_imports

AMP = "torch.cuda.amp.autocast"


def _autocast(src: str) -> str:
    f = finding(src, "autocast()", 'torch.autocast("neuron")', code="NM301", add=("import torch",), remove=(AMP,))
    result = apply_fixes_to_source(src, [f], Target.NEURON, unsafe=False)
    assert result.error == ""
    return result.new_source


def test_unused_from_import_is_removed_and_torch_added_after_the_imports() -> None:
    src = '"""Doc."""\nimport os\nfrom torch.cuda.amp import autocast\n\nwith autocast():\n    pass\n'
    assert _autocast(src) == '"""Doc."""\nimport os\nimport torch\n\nwith torch.autocast("neuron"):\n    pass\n'


def test_still_used_import_is_kept() -> None:
    src = "import torch\nfrom torch.cuda.amp import autocast\n\nwith autocast():\n    pass\nctx = autocast\n"
    assert _autocast(src) == src.replace("with autocast()", 'with torch.autocast("neuron")')


def test_one_name_of_several_is_removed_and_comments_survive() -> None:
    src = (
        "import torch\n"
        "# mixed precision\n"
        "from torch.cuda.amp import GradScaler, autocast  # amp\n"
        "with autocast():\n    s = GradScaler()\n"
    )
    assert _autocast(src) == (
        "import torch\n"
        "# mixed precision\n"
        "from torch.cuda.amp import GradScaler  # amp\n"
        'with torch.autocast("neuron"):\n    s = GradScaler()\n'
    )


def test_comment_above_a_removed_line_stays_where_it_was() -> None:
    src = "import torch\n# autocast for speed\nfrom torch.cuda.amp import autocast\nwith autocast():\n    pass\n"
    out = _autocast(src)
    assert "# autocast for speed\n" in out
    assert "from torch.cuda.amp" not in out


def test_aliased_import_is_matched() -> None:
    src = "import torch\nfrom torch.cuda.amp import autocast as ac\nwith ac():\n    pass\n"
    f = finding(src, "ac()", 'torch.autocast("neuron")', code="NM301", add=("import torch",), remove=(AMP,))
    out = apply_fixes_to_source(src, [f], Target.NEURON, unsafe=False).new_source
    assert out == 'import torch\nwith torch.autocast("neuron"):\n    pass\n'


def test_import_in_try_block_leaves_a_valid_block() -> None:
    src = "import torch\ntry:\n    from torch.cuda.amp import autocast\nexcept ImportError:\n    pass\nwith autocast():\n    pass\n"
    out = _autocast(src)
    assert "try:\n    pass\nexcept ImportError:" in out


def test_add_is_skipped_when_already_imported_in_any_form() -> None:
    for header in ("import torch\n", "import torch.nn\n", "try:\n    import torch\nexcept ImportError:\n    torch = None\n"):
        src = header + "torch.cuda.synchronize()\n"
        assert add_missing_imports(src, ["import torch"], before_offset=len(header)) == src
    aliased = "import torch as th\nth.cuda.synchronize()\n"
    assert add_missing_imports(aliased, ["import torch"], before_offset=19) == "import torch as th\nimport torch\nth.cuda.synchronize()\n"


def test_add_goes_before_the_first_use_not_after_a_late_import() -> None:
    src = "import os\nd = torch.device('neuron')\nimport late\n"
    out = add_missing_imports(src, ["import torch"], before_offset=src.index("d ="))
    assert out == "import os\nimport torch\nd = torch.device('neuron')\nimport late\n"


def test_add_without_imports_goes_after_docstring_shebang_and_cookie() -> None:
    src = "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\"\"\"Doc.\"\"\"\nx = torch.zeros(1)\n"
    out = add_missing_imports(src, ["import torch"], before_offset=src.index("x ="))
    assert out == "#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n\"\"\"Doc.\"\"\"\nimport torch\n\nx = torch.zeros(1)\n"
    bare = "# comment\n@dec\ndef f():\n    return torch.zeros(1)\n"
    out = add_missing_imports(bare, ["import torch"], before_offset=bare.index("return"))
    assert out == "# comment\nimport torch\n\n@dec\ndef f():\n    return torch.zeros(1)\n"


def test_add_respects_future_imports_and_crlf() -> None:
    src = "from __future__ import annotations\r\nx = torch.zeros(1)\r\n"
    out = add_missing_imports(src, ["import torch", "from torch.amp import GradScaler, autocast"], before_offset=37)
    assert out == "from __future__ import annotations\r\nimport torch\r\nfrom torch.amp import GradScaler, autocast\r\nx = torch.zeros(1)\r\n"


def test_added_name_displaces_the_import_it_replaces() -> None:
    src = "from torch.cuda.amp import GradScaler\nscaler = GradScaler()\n"
    f = finding(
        src, "GradScaler()", 'GradScaler("neuron")', code="NM302",
        add=("from torch.amp import GradScaler",), remove=("torch.cuda.amp.GradScaler",),
    )
    out = apply_fixes_to_source(src, [f], Target.NEURON, unsafe=False).new_source
    assert out == 'from torch.amp import GradScaler\nscaler = GradScaler("neuron")\n'


def test_names_read_elsewhere_keep_an_import() -> None:
    src = "from torch.cuda.amp import autocast\n"
    assert "autocast" not in remove_unused_imports(src, [AMP])
    assert remove_unused_imports(src, [AMP], used_elsewhere=frozenset({"autocast"})) == src


def test_notebook_context_counts_other_cells_imports() -> None:
    src = "x = torch.cuda.is_available()\n"
    f = finding(src, "torch.cuda.is_available", "torch.neuron.is_available", add=("import torch",))
    context = ImportContext(bound_elsewhere=frozenset({"import torch"}))
    out = apply_fixes_to_source(src, [f], Target.NEURON, unsafe=False, imports=context).new_source
    assert out == "x = torch.neuron.is_available()\n"


def test_bad_add_imports_entry_skips_the_file() -> None:
    src = "x = 'cuda'\n"
    f = finding(src, "'cuda'", "'neuron'", add=("x = 1",))
    result = apply_fixes_to_source(src, [f], Target.NEURON, unsafe=False)
    assert result.new_source == src and "not an import" in result.error


# Removal is spliced into the original text: every character outside the removed import stays
# (libcst's regenerated module dropped a form feed and the blank lines above a removed import, and
# a CR-only file's final newline).
TC = "torch.cuda"


def _removed(src: str, entries: tuple[str, ...] = (TC,)) -> str:
    return remove_unused_imports(src, list(entries))


def test_form_feed_and_blank_lines_above_a_removed_import_stay() -> None:
    src = "import os\n\x0c\n\nimport torch.cuda as tc\nx = os\n"
    assert _removed(src) == "import os\n\x0c\n\nx = os\n"


def test_a_cr_only_file_keeps_its_final_newline() -> None:
    src = 'import torch.cuda as tc\r\rx = 1\rBACKEND = "nccl"\r'
    assert _removed(src) == '\rx = 1\rBACKEND = "nccl"\r'


def test_a_crlf_file_with_non_ascii_keeps_every_other_byte() -> None:
    src = 'é = "ü"\r\nimport os, torch.cuda as tc  # ß\r\n\x0c\r\nx = os\r\n'
    assert _removed(src) == 'é = "ü"\r\nimport os  # ß\r\n\x0c\r\nx = os\r\n'


def test_statements_sharing_a_line_lose_only_the_import_and_its_semicolon() -> None:
    assert _removed("import torch.cuda as tc; import os\nx = os\n") == "import os\nx = os\n"
    assert _removed("import os; import torch.cuda as tc\nx = os\n") == "import os\nx = os\n"
    assert _removed("y = 1; import torch.cuda as tc; z = 2  # c\n") == "y = 1; z = 2  # c\n"


def test_an_emptied_block_gets_pass_where_the_import_was() -> None:
    assert _removed("if x:\n    import torch.cuda as tc  # c\ny = 1\n") == "if x:\n    pass  # c\ny = 1\n"
    assert _removed("if x: import torch.cuda as tc\ny = 1\n") == "if x: pass\ny = 1\n"
    assert _removed("import torch.cuda as tc\n") == ""  # a module may be empty


def test_names_leave_a_parenthesised_import_with_their_commas() -> None:
    src = "from torch import (\n    cuda,  # c\n    nn,\n)\nx = nn\n"
    assert _removed(src) == "from torch import (\n    nn,\n)\nx = nn\n"
    src = "from torch import (\n    nn,\n    cuda,\n)\nx = nn\n"
    assert _removed(src) == "from torch import (\n    nn,\n)\nx = nn\n"
