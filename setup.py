"""Package discovery that pyproject.toml cannot express: `rules/` (data at the top of the
repository) becomes the package `neuron_migrate.rules`, and `backend/neuron_emu` is its own package.

`backend/neuron_migrate_emulate.pth` is installed at the top of site-packages, for regular and
editable installs alike: with NEURON_MIGRATE_EMULATE=1 it makes the emulated `torch_neuronx`
importable before `import torch` (a bare script that imports torch_neuronx first, as TorchNeuron's
distributed guide does); without the variable it costs one environment lookup per interpreter.
"""

import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

_PTH = Path(__file__).parent / "backend" / "neuron_migrate_emulate.pth"


class _BuildPy(build_py):
    """A wheel's build_lib is its site-packages: the .pth goes to its top."""

    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            self.copy_file(str(_PTH), str(Path(self.build_lib) / _PTH.name))


class _EditableWheel(editable_wheel):
    """An editable wheel gets its top-level .pth files where setuptools writes its namespace ones."""

    def _install_namespaces(self, installation_dir, pth_prefix):  # type: ignore[no-untyped-def]
        super()._install_namespaces(installation_dir, pth_prefix)
        shutil.copy(_PTH, Path(installation_dir) / _PTH.name)


setup(
    packages=[
        *find_packages(include=["neuron_migrate", "neuron_migrate.*"]),
        *find_packages("backend", include=["neuron_emu", "neuron_emu.*"]),
        "neuron_migrate.rules",
    ],
    package_dir={"neuron_migrate.rules": "rules", "neuron_emu": "backend/neuron_emu"},
    cmdclass={"build_py": _BuildPy, "editable_wheel": _EditableWheel},
)
