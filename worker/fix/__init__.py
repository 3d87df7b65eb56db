"""Safe rewrites: a copy of a model that named consumers can serve.

`plan` decides, from the model's own data and each consumer's registry, which
attrs a copy may drop (only what `strip_default_attrs` would have dropped, and
attrs the catalog's attr table measured to change no results) and whether that makes each consumer
serve it; `rewrite` applies a plan to the protobuf bytes without touching any
byte it does not have to; `output` writes a copy without following links.
"""
