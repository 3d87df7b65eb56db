"""Record what one TensorFlow installation can load: a consumer manifest.

This file runs *inside* the consumer's Python environment, which may be as old
as Python 3.6 with TensorFlow 1.x, so it uses only the standard library and
TensorFlow itself, and must stay free of f-strings with `=`, walrus operators,
type-hint syntax newer than 3.6 and imports from the rest of `worker`.
`tfcompat fleet dump-manifest --python PATH` runs it as a script with that
interpreter; the release catalog is built with the very same file, so a user's
manifest and the built-in catalog cannot disagree about what a release is.

The manifest holds:
- the TensorFlow version strings and the GraphDef version numbers the binary
  was compiled with (`TF_GRAPH_DEF_VERSION` and its minimums);
- the checkpoint version numbers, read from the `version.h` header the
  installed package ships (Python does not expose them);
- the full op registry, as TensorFlow's own OpList serialised to JSON, taken
  after importing any extra op libraries named with `--import` or
  `--load-op-library` (custom builds, tensorflow-text and the like);
- the kernel registry: for each op, the devices it has kernels for and each
  kernel's type constraints (what "No OpKernel was registered" is decided by);
- the object types `tf.saved_model.load` revives by identifier (optimizers whose
  slot variables it restores through `add_slot`);
- the names of its `DataType` enum (`types_pb2`): a node whose type attr holds a
  value the enum lacks fails validation ("AttrValue has invalid DataType enum").
"""

from __future__ import print_function

import argparse
import datetime
import importlib
import json
import os
import platform
import re
import sys

MANIFEST_FORMAT = "tfcompat-manifest/1"

_VERSION_H_NAMES = (
    "TF_GRAPH_DEF_VERSION",
    "TF_GRAPH_DEF_VERSION_MIN_CONSUMER",
    "TF_GRAPH_DEF_VERSION_MIN_PRODUCER",
    "TF_CHECKPOINT_VERSION",
    "TF_CHECKPOINT_VERSION_MIN_CONSUMER",
    "TF_CHECKPOINT_VERSION_MIN_PRODUCER",
)


def _op_list_bytes():
    """Serialized OpList of every op registered in this process.

    The C API call moved between releases: `pywrap_tensorflow` up to 2.1,
    `pywrap_tf_session` from 2.2 on.
    """
    c_api = None
    try:
        from tensorflow.python.client import pywrap_tf_session as c_api
    except ImportError:
        from tensorflow.python import pywrap_tensorflow as c_api
    buf = c_api.TF_GetAllOpList()
    try:
        return c_api.TF_GetBuffer(buf)
    finally:
        c_api.TF_DeleteBuffer(buf)


def _local_device_types():
    """The device types this process creates by default (CPU, XLA_CPU up to 2.3, GPU
    where one is visible); None where the call is missing."""
    try:
        from tensorflow.python.client import device_lib

        return sorted({d.device_type for d in device_lib.list_local_devices()})
    except Exception:
        return None


def _kernel_table(device_types):
    """op -> device -> the type constraints of each kernel registered for it (a kernel
    is a sorted list of [attr, [allowed DataType names]]; [] takes every type).

    Labelled kernels are left out: TensorFlow picks one only for a node that names
    its label (`_kernel`). Only the devices this process creates are kept (and
    `DEFAULT`, which serves any): up to 2.3 that includes `XLA_CPU`, whose kernels the
    placer uses where the CPU has none, and creating the devices is what registers
    them. `kernels.get_all_registered_kernels` exists from 1.14; 1.13 has the same C
    call in `pywrap_tensorflow`. None where neither answers."""
    from tensorflow.core.framework import kernel_def_pb2, types_pb2

    placed_on = set(device_types or ["CPU"]) | {"DEFAULT"}

    try:
        from tensorflow.python.framework import kernels

        kernel_list = kernels.get_all_registered_kernels()
    except (ImportError, AttributeError):
        try:
            from tensorflow.python import pywrap_tensorflow as c_api

            buf = c_api.TF_GetAllRegisteredKernels()
            kernel_list = kernel_def_pb2.KernelList()
            kernel_list.ParseFromString(c_api.TF_GetBuffer(buf))
        except Exception:
            return None
    table = {}
    for kernel in kernel_list.kernel:
        if kernel.label or kernel.device_type not in placed_on:
            continue
        constraints = sorted(
            [c.name, sorted(types_pb2.DataType.Name(t) for t in c.allowed_values.list.type)]
            for c in kernel.constraint
        )
        by_device = table.setdefault(kernel.op, {})
        found = by_device.setdefault(kernel.device_type, [])
        if constraints not in found:
            found.append(constraints)
    for by_device in table.values():
        for found in by_device.values():
            found.sort()
    return table


def _revived_types():
    """identifier -> each registration tf.saved_model.load revives that user object
    type with (its version numbers, as `revived_types.VersionedTypeRegistration` keeps
    them) and which methods the revived object has that the loader calls (`add_slot`,
    for an object holding slot variables). What `import tensorflow` (and `--import`)
    registered; an identifier not listed is revived as a plain `_UserObject`."""
    try:
        from tensorflow.core.protobuf import saved_object_graph_pb2
        from tensorflow.python.saved_model import revived_types
    except ImportError:
        return None
    registry = getattr(revived_types, "_REVIVED_TYPE_REGISTRY", None)
    if not isinstance(registry, dict):
        return None
    found = {}
    for identifier, value in registry.items():
        registrations = value[1] if isinstance(value, tuple) else value
        rows = []
        for reg in registrations:
            version = getattr(reg, "version", 0)
            proto = saved_object_graph_pb2.SavedUserObject(identifier=identifier)
            proto.version.producer = version
            try:
                revived = reg._object_factory(proto)
                cls = type(revived).__name__
                methods = sorted(m for m in ("add_slot",) if hasattr(revived, m))
            except Exception:
                cls, methods = None, []
            rows.append(
                {
                    "version": version,
                    "min_producer_version": getattr(reg, "_min_producer_version", 0),
                    "min_consumer_version": getattr(reg, "_min_consumer_version", 0),
                    "bad_consumers": list(getattr(reg, "_bad_consumers", [])),
                    "class": cls,
                    "methods": methods,
                }
            )
        found[identifier] = rows
    return found


def _data_types():
    """The DataType names this binary's own `types.proto` holds (its `types_pb2`), or
    None when the module cannot be read."""
    try:
        from tensorflow.core.framework import types_pb2
    except ImportError:
        return None
    return sorted(name for name, _ in types_pb2.DataType.items())


def _read_version_header(tf):
    """Version macros from the `version.h` the package ships, or {} if absent."""
    found = {}
    try:
        include = tf.sysconfig.get_include()
    except Exception:
        return found
    path = os.path.join(include, "tensorflow", "core", "public", "version.h")
    if not os.path.exists(path):
        return found
    with open(path) as handle:
        text = handle.read()
    for name in _VERSION_H_NAMES:
        match = re.search(r"#define\s+%s\s+(\d+)" % name, text)
        if match:
            found[name] = int(match.group(1))
    return found


def build_manifest(import_modules, op_libraries):
    import tensorflow as tf
    from google.protobuf import json_format
    from tensorflow.core.framework import op_def_pb2

    for name in import_modules:
        importlib.import_module(name)
    for path in op_libraries:
        tf.load_op_library(path)

    op_list = op_def_pb2.OpList()
    op_list.ParseFromString(_op_list_bytes())
    ops = [
        json_format.MessageToDict(op, preserving_proto_field_name=True)
        for op in sorted(op_list.op, key=lambda o: o.name)
    ]

    version = getattr(tf, "version", None)
    header = _read_version_header(tf)

    def graph_def(attr, macro):
        value = getattr(version, attr, None) if version is not None else None
        if value is None:
            value = getattr(tf, attr, None)
        if value is None:
            value = header.get(macro)
        return value

    devices = _local_device_types()
    return {
        "format": MANIFEST_FORMAT,
        "created_at": datetime.datetime.utcnow().replace(microsecond=0).isoformat() + "Z",
        "tensorflow": {
            "version": getattr(version, "VERSION", None) or tf.__version__,
            "git_version": (
                getattr(version, "GIT_VERSION", None) or getattr(tf, "GIT_VERSION", None)
            ),
            "compiler_version": getattr(version, "COMPILER_VERSION", None),
        },
        "graph_def_version": {
            "producer": graph_def("GRAPH_DEF_VERSION", "TF_GRAPH_DEF_VERSION"),
            "min_consumer": graph_def(
                "GRAPH_DEF_VERSION_MIN_CONSUMER", "TF_GRAPH_DEF_VERSION_MIN_CONSUMER"
            ),
            "min_producer": graph_def(
                "GRAPH_DEF_VERSION_MIN_PRODUCER", "TF_GRAPH_DEF_VERSION_MIN_PRODUCER"
            ),
        },
        "checkpoint_version": {
            "producer": header.get("TF_CHECKPOINT_VERSION"),
            "min_consumer": header.get("TF_CHECKPOINT_VERSION_MIN_CONSUMER"),
            "min_producer": header.get("TF_CHECKPOINT_VERSION_MIN_PRODUCER"),
            "source": "version.h" if header else None,
        },
        "imports": list(import_modules),
        "op_libraries": [os.path.basename(p) for p in op_libraries],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "ops": ops,
        "kernels": _kernel_table(devices),
        "devices": devices,
        "revived_types": _revived_types(),
        "data_types": _data_types(),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="tfcompat fleet dump-manifest",
        description="Write this Python environment's TensorFlow version numbers "
        "and op registry as a tfcompat consumer manifest (JSON).",
    )
    parser.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first so the ops it registers are recorded (repeatable)",
    )
    parser.add_argument(
        "--load-op-library",
        dest="op_libraries",
        action="append",
        default=[],
        metavar="SO",
        help="tf.load_op_library(SO) first (repeatable)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        manifest = build_manifest(args.imports, args.op_libraries)
    except ImportError as exc:
        sys.stderr.write("dump-manifest: cannot import TensorFlow here: %s\n" % exc)
        return 2
    text = json.dumps(manifest, indent=None, sort_keys=True, separators=(",", ":"))
    if args.output == "-":
        sys.stdout.write(text + "\n")
    else:
        with open(args.output, "w") as handle:
            handle.write(text + "\n")
        sys.stderr.write(
            "dump-manifest: TensorFlow %s, GraphDef version %s, %d ops -> %s\n"
            % (
                manifest["tensorflow"]["version"],
                manifest["graph_def_version"]["producer"],
                len(manifest["ops"]),
                args.output,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
