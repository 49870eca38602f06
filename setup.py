"""Package discovery that pyproject.toml cannot express: `rules/` (data at the top of the
repository) becomes the package `neuron_migrate.rules`, and `backend/neuron_emu` is its own package."""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["neuron_migrate", "neuron_migrate.*"]),
        *find_packages("backend", include=["neuron_emu", "neuron_emu.*"]),
        "neuron_migrate.rules",
    ],
    package_dir={"neuron_migrate.rules": "rules", "neuron_emu": "backend/neuron_emu"},
)
