"""The Keras each TensorFlow release brings, and the Pythons it runs on (data).

`tf.keras.models.load_model` in a TensorFlow environment runs:
- TF 1.13 to 2.5: the `tf.keras` bundled in the tensorflow wheel (its version
  string reads "2.2.4-tf" in 1.13-2.1, "2.4.0" in 2.4; measured in 1.15.5 and 2.4.4);
- TF 2.6 to 2.15: the `keras` package of the same minor, pinned by the wheel
  (`keras<2.16,>=2.15.0` in 2.15.1's METADATA; measured 2.8.0, 2.10.0, 2.12.0,
  2.15.0);
- TF 2.16 and later: Keras 3, the `keras` package at or above a minimum the wheel
  names (`keras>=3.2.0` in 2.17.1, `>=3.5.0` in 2.18.1, `>=3.12.0` in 2.21.0, read
  from the installed METADATA; 2.16 `>=3.0.0`, 2.19 `>=3.5.0`, 2.20 `>=3.10.0` from
  the release notes). pip installs the newest Keras 3 that fits, so the Keras a
  consumer runs is at least this; a fleet entry's `keras:` says exactly. A TF 2.16+
  process with TF_USE_LEGACY_KERAS=1 runs tf-keras instead, Keras 2 versioned as
  TensorFlow's minors: declared `keras: "2.17"`.

The Python versions are those with a Linux x86_64 wheel of the minor on PyPI
(`pip index versions tensorflow --python-version X.Y`): marshalled Python code (a
Keras Lambda) reads back only in a Python of the writer's layout
(`worker.formats.pycode`), so a release whose every Python has another layout
cannot load it.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

# minor -> (Keras its load_model runs, oldest Python, newest Python)
KERAS_OF_RELEASE: dict[str, tuple[str, str, str]] = {
    "1.13": ("2.2.4-tf", "3.5", "3.7"),
    "1.14": ("2.2.4-tf", "3.5", "3.7"),
    "1.15": ("2.2.4-tf", "3.5", "3.7"),
    "2.0": ("2.2.4-tf", "3.5", "3.7"),
    "2.1": ("2.2.4-tf", "3.5", "3.7"),
    "2.2": ("2.3.0-tf", "3.5", "3.8"),
    "2.3": ("2.4.0", "3.5", "3.8"),
    "2.4": ("2.4.0", "3.6", "3.8"),
    "2.5": ("2.5.0", "3.6", "3.9"),
    "2.6": ("2.6", "3.6", "3.9"),
    "2.7": ("2.7", "3.7", "3.9"),
    "2.8": ("2.8", "3.7", "3.10"),
    "2.9": ("2.9", "3.7", "3.10"),
    "2.10": ("2.10", "3.7", "3.10"),
    "2.11": ("2.11", "3.7", "3.10"),
    "2.12": ("2.12", "3.8", "3.11"),
    "2.13": ("2.13", "3.8", "3.11"),
    "2.14": ("2.14", "3.9", "3.11"),
    "2.15": ("2.15", "3.9", "3.11"),
    "2.16": ("3.0", "3.9", "3.12"),
    "2.17": ("3.2", "3.9", "3.12"),
    "2.18": ("3.5", "3.9", "3.12"),
    "2.19": ("3.5", "3.9", "3.12"),
    "2.20": ("3.10", "3.9", "3.13"),
    "2.21": ("3.12", "3.10", "3.13"),
}


def _minor(release: str) -> str:
    try:
        version = Version(release)
    except InvalidVersion:
        return ""
    return f"{version.major}.{version.minor}"


def keras_of_release(release: str | None) -> str | None:
    """The Keras `load_model` runs in that TensorFlow release; None when not known."""
    if release is None:
        return None
    found = KERAS_OF_RELEASE.get(_minor(release))
    return found[0] if found else None


def pythons_of_release(release: str | None) -> tuple[str, str] | None:
    """(oldest, newest) Python with a wheel of that release; None when not known."""
    if release is None:
        return None
    found = KERAS_OF_RELEASE.get(_minor(release))
    return (found[1], found[2]) if found else None
