"""Keras files against the Keras a consumer's `load_model` runs: the measured rules.

Each rule below was seen on real releases (`tests/fixtures/keras/matrix.jsonl`:
`tf.keras.models.load_model(path, compile=False)` in nine TensorFlow
environments, 1.15.5 to 2.21.0, on files written by their Keras), in the order
Keras meets them when it loads a file:

- TensorFlow Serving reads SavedModels only: a consumer declared `serving:` cannot
  load a Keras file at all (`keras.not-servable`).
- A `.keras` zip in a Keras older than 2.12 is not read as one: TF 1.15 and 2.4
  take the path for a SavedModel directory ("SavedModel file does not exist"),
  2.8 for HDF5 ("Unable to open file (file signature not found)")
  (`keras.format-unsupported`).
- A file written by Keras 3 fails in every Keras 2: its configs carry arguments
  Keras 2 lacks ("Unrecognized keyword arguments: ['batch_shape', 'optional']"
  on InputLayer; 2.12 and 2.15: "Error when deserializing class 'InputLayer'")
  (`keras.newer-major`).
- A Keras 2 file in Keras 3 fails on arguments Keras 3 dropped
  (`keras.argument-removed`): `time_major` of the recurrent layers ("Unrecognized
  keyword arguments passed to LSTM: {'time_major': False}"), a `dtype` inside an
  initializer's config (TF 1.x's Keras 2.2.4-tf writes it: "GlorotUniform could
  not be deserialized properly"), and, in a `.keras` written by Keras 2.13+
  (layer entries that name their module), a Lambda's `function_type`, `module`,
  `output_shape_type`, `output_shape_module` ("Unrecognized keyword arguments
  passed to Lambda"); Keras 3's H5 reader translates those, and entries without a
  module (Keras 2.12's `.keras`) take the same legacy path.
- A Lambda holding marshalled Python is refused unless `safe_mode=False`
  (`keras.lambda-safe-mode`): by Keras 3 always, and by Keras 2.12-2.15 reading a
  `.keras` zip; Keras 2 reading H5 does not ask.
- A Keras 2 `.keras` written by one Keras 2 minor does not load in another: the
  weights' paths differ ("Layer 'dense' expected 2 variables, but received 0
  variables during loading"; 2.12 and 2.15 both ways) (`keras.archive-minor`).
- Marshalled Lambda code reads back only in a Python of the same code-object
  layout (`worker.formats.pycode`): 3.7 bytecode in 3.11 "EOFError: EOF read where
  object expected", 3.11 bytecode in 3.7 "SystemError: ... bad argument to internal
  function" (`keras.lambda-python`). With the consumer's Python declared the answer
  is known; otherwise from the Pythons its release has wheels for: none of them
  reads it, an error; some, a warning naming those.

Added after the held-out family was loaded (so tuned on it; see
tests/fixtures/keras/README.md):
- a class or module the consumer's Keras lacks (`keras.class-unknown`): TF 1.15's
  Keras 2.2.4-tf knows no `Functional` (Keras 2.4+ names functional models so:
  "Unknown layer: Functional"), and a Keras 2.13-2.15 `.keras` of a functional model
  names `keras.src.engine.functional`, which neither Keras 2.12 nor Keras 3 can
  import;
- an argument an older Keras 2 lacks (`keras.argument-unknown`): the global pooling
  layers' `keepdims` (Keras 2.6+) in 1.15 and 2.4 ("Keyword argument not understood:
  'keepdims'");
- (from the second held-out family) a layer held by a wrapper (Bidirectional) whose
  entry names no module, as Keras 2.10 and older write it, is a class Keras 3 cannot
  locate ("Could not locate class 'LSTM'") (`keras.class-unknown`);
- more arguments Keras 3 rejects in a Keras 2.13+ `.keras`: `batch_input_shape` on a
  layer other than InputLayer (Embedding writes it), BatchNormalization's `axis` as a
  list;
- (from the held-out `inputs` family) Embedding's `input_length`, which every Keras 2
  writes and Keras 3.0-3.1 reject (3.2 accepts it again): an error where the consumer runs
  only those, a warning where it may run them.

- (from the held-out `tf-keras-files` rows, files written by tf-keras 2.16 and 2.21) tf-keras
  2.21's InputLayer `optional`, which older Keras 2 reject (`keras.argument-unknown`);
- (from the held-out `tf-keras` rows: the committed files loaded by tf-keras 2.16-2.21, the
  Keras 2 that TF 2.16+ run with TF_USE_LEGACY_KERAS=1, declared `keras==2.16`..`2.21`)
  tf-keras reads Keras 2.13-2.15 archives: their `keras.src.engine` module (tf-keras
  imports `keras.*` as `tf_keras.*`) and their weights' paths (it forks Keras 2.15).

From the second held-out whole-model round (DenseNet's 'conv1/conv'), Keras 3's
`Operation.__init__` and files with such names loaded by every Keras 3 minor
(tests/fixtures/keras-names): a '/' in any layer or model name, which Keras 2 takes and
every Keras 3 refuses (`keras.layer-name`, `worker/compat/keras_names.py`).

Written from Keras's code before any fixture tested it (`worker/compat/keras_inputs.py`):
a Keras 2 Sequential whose first entry is a layer carrying `batch_input_shape` (TF 1.x and
2.0-2.2 write no InputLayer) is rebuilt by Keras 3 on an input of one axis more; the
request the producer served fails, or the load does (`keras.input-shape`).

A rule is data about one layer or one file; the Fix says what to do with the
file or the consumer, never only prose. Each rule is a named check
(`worker/compat/keras_checks.py`) in the registries below; the facts they read are
in `worker/compat/keras_rules.py`.
"""

from __future__ import annotations

from collections.abc import Callable

from worker.compat import keras_checks as checks
from worker.compat.keras_checks import KerasLoad, start_load
from worker.compat.keras_rules import keras_version_tuple
from worker.compat.subject import Subject
from worker.model.findings import Finding
from worker.model.keras import KerasModel

Gate = Callable[[Subject, KerasModel, tuple[int, int] | None], list[Finding] | None]
Check = Callable[[KerasLoad], None]

# What stops the load before any layer is rebuilt, in the order Keras meets it: the first
# gate that answers is the whole answer.
GATES: tuple[tuple[str, Gate], ...] = (
    ("keras.not-servable", checks.not_servable),
    ("keras.version-unknown", checks.version_unknown),
    ("keras.format-unsupported", checks.format_unsupported),
    ("keras.class-unknown", checks.class_unknown),
    ("keras.newer-major", checks.newer_major),
)
# Then the layers, the input, the Lambdas, the weights and the compile configuration
# (keras.compile-argument: its objects and arguments),
# in the order Keras meets them: every check runs and adds what it finds.
CHECKS: tuple[tuple[str, Check], ...] = (
    ("keras.argument-unknown", checks.argument_unknown),
    ("keras.layer-name", checks.layer_names),
    ("keras.argument-removed", checks.argument_removed),
    ("keras.unknown-object", checks.unknown_objects),
    ("keras.layer-dtype", checks.layer_dtype),
    ("keras.input-shape", checks.input_shape),
    ("keras.layer-config", checks.layer_configs),
    ("keras.layer-unmeasured", checks.layer_unmeasured),
    ("keras.lambda-safe-mode", checks.lambda_safe_mode),
    ("keras.archive-minor", checks.archive_minor),
    ("keras.lambda-python", checks.lambda_python),
    ("keras.nested-call", checks.nested_calls),
    ("keras.unbuilt-sequential", checks.unbuilt_sequential),
    ("keras.compile-argument", checks.compile_objects),
    ("keras.compile-only", checks.compile_only),
)


def keras_findings(s: Subject) -> list[Finding]:
    """The consumer's load of a Keras file, as the rules above predict it."""
    model = s.artifact.keras
    if model is None:
        return []
    runs = keras_version_tuple(s.consumer.keras)
    for _, gate in GATES:
        answer = gate(s, model, runs)
        if answer is not None:
            return answer
    assert runs is not None  # the version-unknown gate answers otherwise
    load = start_load(s, model, runs)
    for _, check in CHECKS:
        check(load)
    return load.findings
