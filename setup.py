"""Find every package under the code folders and install it as ``teamtree.<folder>...``.

The repository keeps the product card's top-level folders (agents/, broker/, ...), each
importable as ``teamtree.<folder>``; setuptools' static config cannot prefix what
``find_packages`` returns, so this file does, and nothing is listed by hand.
"""

from setuptools import find_packages, setup

FOLDERS = ("agents", "broker", "drivers", "hardware", "planners")

setup(
    packages=[
        f"teamtree.{name}"
        for name in find_packages(include=[*FOLDERS, *(f"{folder}.*" for folder in FOLDERS)])
    ],
    package_dir={f"teamtree.{folder}": folder for folder in FOLDERS},
)
