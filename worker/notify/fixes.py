"""A finding's fix, in words: rendered from its data (`Finding.fix`), never parsed back.

One renderer for every surface (terminal, Slack, check runs): they differ only
in how a code span is marked (`quote`). Reports written before fixes were
data have none, and render no fix rather than a guessed one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Quote = Callable[[str], str]


def backticks(text: str) -> str:
    return f"`{text}`"


def plain(text: str) -> str:
    return text


def fix_text(fix: Mapping[str, Any] | None, consumer: str | None, quote: Quote = backticks) -> str:
    """One sentence saying what to do; '' when there is nothing to do or nothing known."""
    if not fix:
        return ""
    kind = fix.get("kind")
    release, op, attr = fix.get("release"), fix.get("op"), fix.get("attr")
    who = quote(consumer) if consumer else "the consumer"
    item = quote(f"{op}.{attr}" if op and attr else str(op)) if op else ""
    if kind == "upgrade_to":
        if not release:
            return f"No known release serves it as exported: re-export for {who}" + (
                f" without {item}" if item else ""
            )
        text = f"Upgrade {who} to TensorFlow >= {release}"
        if op and attr:
            return f"{text}, or export with {item} at its default"
        return f"{text}, or re-export without op {item}" if op else text
    if kind == "keep_at_most":
        return f"Re-export without op {item}, or keep {who} at TensorFlow {release} or older"
    if kind == "strip_default_attrs":
        return (
            "Re-export dropping attrs that hold their defaults (SavedModel: "
            f"{quote('strip_default_attrs=True')}; a frozen GraphDef: strip them before freezing)"
        )
    if kind == "set_attr_default":
        return f"Export with {item} at its default"
    if kind == "drop_attr":
        return (
            f"Re-export without attr {item}, or run {quote('tfcompat fix')} (measured: it "
            "changes no results, so dropping it is safe)"
        )
    if kind == "reexport_without_op":
        return f"Re-export without op {item}"
    if kind == "load_op_library":
        return f"Load the library of custom op {item} in {who} and record its manifest"
    if kind == "use_model_export":
        return (
            f"Export the Keras 3 model with {quote('model.export()')} instead of "
            f"{quote('tf.saved_model.save')}, or load it with {quote('tf.saved_model.load')}"
        )
    if kind == "use_loader":
        return f"Load it with {quote(str(fix.get('loader')))}"
    if kind == "use_cuda_build":
        return f"Serve it from a CUDA build of TensorFlow, or re-export without op {item}"
    if kind == "reexport_with":
        return (
            f"Export with TensorFlow {release}, the consumer's release"
            if release
            else "Re-export with a newer TensorFlow"
        )
    if kind == "record_manifest":
        return (
            f"Record {who}'s op registry and kernels with {quote('tfcompat fleet dump-manifest')}"
        )
    if kind == "leave_banned_release":
        return f"Move {who} off its banned release"
    if kind == "list_banned_releases":
        return "List the fleet's banned releases in the model's bad_consumers at export"
    if kind == "reexport_xla":
        return _xla_fix_text(fix, who, quote)
    if kind == "clear_devices":
        return (
            f"Re-export with {quote('clear_devices=True')} (no node pinned to a device), "
            f"or give {who} the device the graph names"
        )
    return (
        _runs_fix_text(kind, who, item, quote)
        or _tflite_fix_text(kind, fix, who, item, quote)
        or _keras_fix_text(kind, fix, who, quote)
    )


def _xla_fix_text(fix: Mapping[str, Any], who: str, quote: Quote) -> str:
    """Re-export a jax model's XlaCallModule so the consumer's kernel runs it."""
    attr, value, release = fix.get("attr"), fix.get("value"), fix.get("release")
    upgrade = f", or upgrade {who} to TensorFlow >= {release}" if release else ""
    if attr == "version":
        if not value:
            return f"Re-export with a jax whose serialization version {who} runs" + upgrade
        flag = quote(f"--jax_export_calling_convention_version={value}")
        return f"Re-export with jax's serialization version {value} ({flag}){upgrade}"
    if attr == "platforms":
        platform = str(value or "cpu")
        call = quote(f"native_serialization_platforms=('{platform}', ...)")
        other = ", or serve it from a GPU build" if platform == "cpu" else ""
        return (
            f"Re-export with {quote(platform)} among the platforms (jax2tf: {call}; "
            f"{quote('jax.export')}: {quote('platforms=')}){upgrade}{other}"
        )
    if attr == "module":
        return (
            "Re-export with an older jax, whose StableHLO is "
            + (str(value) if value else "older than this module's")
            + upgrade
        )
    return ""


def _runs_fix_text(kind: Any, who: str, item: str, quote: Quote) -> str:
    """Fixes for the loader's steps and the first request (worker.compat.runs)."""
    if kind == "export_serve_tag":
        return (
            f"Export a MetaGraph tagged exactly {quote('serve')} "
            f"({quote('tags=[tf.saved_model.SERVING]')}) for {who}"
        )
    if kind == "load_with_tags":
        call = quote("tf.saved_model.load(path, tags=['serve'])")
        return f"Load it with {call}"
    if kind == "add_init_op":
        init = quote("main_op=tf.compat.v1.tables_initializer()")
        return (
            f"Export with an init op that fills it ({init}, or a group with "
            f"{quote('tf.compat.v1.local_variables_initializer()')})"
        )
    if kind == "save_variables":
        return "Export with the variable in the saver, so variables/ restores it"
    if kind == "feed_placeholder":
        return (
            "Add every placeholder the signature's outputs need to its inputs, or build "
            f"them with {quote('tf.compat.v1.placeholder_with_default')}"
        )
    if kind == "add_signature":
        return f"Export a {quote('serving_default')} signature"
    if kind == "ship_assets":
        return f"Ship the SavedModel's {quote('assets/')} directory with it, every file it names"
    if kind == "read_asset_at_init":
        return (
            f"Open the asset in the init op (a table initializer in {quote('main_op')}), or "
            f"save with {quote('tf.saved_model.save')} (an asset path the init op assigns), "
            f"so {item} reads the shipped copy, not the path written at export"
        )
    if kind == "export_without_optimizer":
        return (
            "Export for serving without the optimizer "
            f"({quote('model.export(DIR)')}, or save a tf.Module holding only the "
            "model's variables), or load it with the v1 loader"
        )
    if kind == "use_gpu_build":
        return f"Serve it from {who} with a GPU, or re-export without op {item}"
    if kind == "strip_output_shapes":
        return (
            f"Run {quote('tfcompat fix')} for {who}: it removes the {quote('_output_shapes')} "
            f"attrs of {item} and of the nodes downstream (informational: no results change), "
            f"or export without {quote('add_shapes=True')}; {quote('clear_devices=True')} "
            "does not help"
        )
    return ""


def _keras_fix_text(kind: Any, fix: Mapping[str, Any], who: str, quote: Quote) -> str:
    """Fixes for Keras files and unsafe layers (worker.compat.keras, worker.compat.unsafe)."""
    keras, python = fix.get("keras"), fix.get("python")
    with_keras = f"Keras {keras}" if keras else "the Keras that wrote it"
    if kind == "export_saved_model":
        return (
            f"Export a SavedModel with {quote('model.export(DIR)')} in the Keras that wrote "
            f"it, and serve that to {who}"
        )
    if kind == "float_layer_dtype":
        layer = fix.get("name") or "the layer"
        example = quote("keras.Input(..., dtype='int32')")
        return (
            f"Rebuild the model in {who}'s Keras with {quote(str(layer))} in float32 (its input "
            f"keeps the integer dtype, e.g. {example}), "
            f"load the weights with {quote('model.load_weights(path)')} and save it again"
        )
    if kind == "rename_layers":
        layer = str(fix.get("name") or "conv1/conv")
        renamed = layer.replace("/", "_")
        save = 'model.save("renamed.h5")'
        text = (
            f"Rebuild the model in {with_keras} with no '/' in any layer or model name, the "
            f"input's and the model's own included ({quote(layer)} as {quote(renamed)}; from "
            f"the file alone: replace the names in {quote('model.to_json()')} and rebuild it "
            f"with {quote('keras.models.model_from_json')}), load the weights from the "
            f"original file with {quote('model.load_weights(path)')} (an H5 file's load by "
            f"layer order) and save it as H5 ({quote(save)}: a path "
            "with no suffix writes a SavedModel, which Keras 3 does not load); a "
            f"{quote('.keras')} saved by Keras 2 keeps the names and fails the same"
        )
        if fix.get("value") == "nested":
            text += (
                ". A model used as a layer in it also fails in Keras 3 until its calls are "
                "renumbered: Keras 2 writes the call node 1, Keras 3 looks for node 0; in the "
                f"saved file's {quote('model_config')} attribute (h5py), lower by one the node "
                f"index of each inbound reference to the nested model ({quote('[name, 1, 0, {}]')}"
                f" as {quote('[name, 0, 0, {}]')})"
            )
        return text
    if kind == "renumber_nested_calls" and keras:
        name = str(fix.get("name") or "the nested model")
        return (
            f"Upgrade {who} to Keras {keras} or later, which reads the model's "
            f"{quote('output_layers')} reference to {quote(name)} as Keras 2 numbers it"
        )
    if kind == "renumber_nested_calls":
        name = str(fix.get("name") or "the nested model")
        return (
            f"In the file's {quote('model_config')} attribute (h5py), lower by one the node "
            f"index of each inbound reference to {quote(name)} ({quote(f'[{name!r}, 1, 0, {{}}]')}"
            f" as {quote(f'[{name!r}, 0, 0, {{}}]')}); the weights stay as they are, and Keras 2 "
            "loads the file as before"
        )
    if kind == "resave_as_h5":
        save = quote('model.save("model.h5")')
        return f"Load it with {with_keras} and save it as {save}"
    if kind == "resave_as_keras3":
        return (
            f"Load it with {with_keras}, rebuild it in Keras 3 without the dropped "
            f"arguments and save it as {quote('.keras')}; or export a SavedModel with "
            f"{quote('model.export(DIR)')}"
        )
    if kind == "replace_lambda":
        return (
            "Replace the Lambda layer with a registered Layer subclass "
            f"({quote('@keras.saving.register_keras_serializable()')}), or export a SavedModel "
            f"with {quote('model.export(DIR)')}"
        )
    if kind == "resave_with_python":
        return f"Save the model from Python {python}, the one {who} runs, or replace the Lambda"
    if kind == "declare_input":
        shape = fix.get("shape") or "its input's batch shape"
        return (
            f"Load it with Keras {keras or '2.4'} or a later Keras 2 (TensorFlow 2.3-2.15) and "
            f"save it again, which writes an InputLayer of batch shape {shape} first; or "
            f"rebuild it in Keras 3 on {quote(f'keras.Input(batch_shape={shape})')}; or "
            f"serve it to {who} with Keras 2 ({quote('tf_keras')})"
        )
    if kind == "rebuild_with_input":
        first = quote(str(fix["name"])) if fix.get("name") else "the first layer"
        return (
            "Rebuild the model in code with its input declared (an "
            f"{quote('keras.Input(shape=...)')} first, or {quote('input_shape=')} on layer "
            f"{first}), load the file's weights into it ({quote('model.load_weights(path)')}) "
            "and save it again"
        )
    if kind == "declare_keras":
        return f"Declare {quote('keras:')} and {quote('python:')} in {who}'s fleet entry"
    name = fix.get("name") or "the object"
    if kind == "register_custom_object":
        return (
            f"Pass {name} in {quote('load_model(..., custom_objects={...})')} (and list it in "
            f"{who}'s {quote('custom_objects')} when its process registers it), or re-save the "
            f"model with it registered ({quote('@keras.saving.register_keras_serializable()')})"
        )
    if kind == "load_without_compile" and keras:
        return (
            f"Upgrade {who} to Keras {keras} or later and load it with "
            f"{quote('load_model(path, compile=False)')} (older Keras 3 compile an H5 file "
            f"whatever {quote('compile')} says), or re-save the model compiled with {name} as "
            f"{who}'s Keras takes it"
        )
    if kind == "load_without_compile":
        return (
            f"Load it with {quote('load_model(path, compile=False)')} and compile in code, or "
            f"re-save it compiled with {name} as {who}'s Keras takes it"
        )
    return ""


def _tflite_fix_text(kind: Any, fix: Mapping[str, Any], who: str, item: str, quote: Quote) -> str:
    release, runtime = fix.get("release"), fix.get("runtime")
    if kind == "upgrade_runtime":
        if not release:
            return f"No measured newer {runtime} release runs it as converted"
        return f"Upgrade {who} to {runtime} >= {release}"
    if kind == "convert_with":
        if not release:
            return "Convert it again with a TensorFlow converter"
        return f"Convert it with TensorFlow {release}'s converter, or upgrade {who}"
    if kind == "convert_without":
        setting = quote(f"{fix.get('value')} = True")
        text = f"Convert it without {setting} (a model under 2 GB needs none)"
        if not release:
            return text + f": no measured newer {runtime or 'release'} reads it"
        family = "TensorFlow" if runtime == "tensorflow" else runtime
        return text + f", or upgrade {who} to {family} >= {release}"
    if kind == "add_flex_delegate":
        text = f"Link the Flex delegate into {who}, or convert without Select TF op {item}"
        return text + (f" (TensorFlow {release}'s tf.lite.Interpreter has it)" if release else "")
    if kind == "link_custom_op":
        text = f"Register custom op {item}'s kernel with {who}'s op resolver"
        if not release:
            return text
        family = "TensorFlow" if runtime == "tensorflow" else runtime
        return text + f", or upgrade it to {family} >= {release}, which runs it by default"
    if kind == "serve_with_tflite_runtime":
        return (
            "Serve the SavedModel it was converted from to "
            f"{who}, or run the .tflite in a TFLite runtime ({quote('tf.lite.Interpreter')}, "
            "LiteRT)"
        )
    if kind == "measure_tflite_runtime":
        return f"Measure {who}'s TFLite op table with {quote('tools/tflite/build_table.py')}"
    return ""


def alternative_text(fix: Mapping[str, Any] | None, quote: Quote = backticks) -> str:
    """What an `upgrade_to` fix offers besides upgrading ('' when nothing): for a list of
    fixes where each consumer's upgrade is said once."""
    if not fix or fix.get("kind") != "upgrade_to" or not fix.get("op"):
        return ""
    op, attr = fix["op"], fix.get("attr")
    if attr:
        return f"Or export with {quote(f'{op}.{attr}')} at its default"
    return f"Or re-export without op {quote(op)}"
