from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GraphNodes(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, node: _Optional[_Iterable[bytes]] = ...) -> None: ...

class FunctionNodes(_message.Message):
    __slots__ = ("node_def",)
    NODE_DEF_FIELD_NUMBER: _ClassVar[int]
    node_def: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, node_def: _Optional[_Iterable[bytes]] = ...) -> None: ...

class NodeView(_message.Message):
    __slots__ = ("name", "op", "input", "device", "attr")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    ATTR_FIELD_NUMBER: _ClassVar[int]
    name: str
    op: str
    input: _containers.RepeatedScalarFieldContainer[str]
    device: str
    attr: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, name: _Optional[str] = ..., op: _Optional[str] = ..., input: _Optional[_Iterable[str]] = ..., device: _Optional[str] = ..., attr: _Optional[_Iterable[bytes]] = ...) -> None: ...

class GraphView(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: _containers.RepeatedCompositeFieldContainer[NodeView]
    def __init__(self, node: _Optional[_Iterable[_Union[NodeView, _Mapping]]] = ...) -> None: ...

class FunctionView(_message.Message):
    __slots__ = ("node_def",)
    NODE_DEF_FIELD_NUMBER: _ClassVar[int]
    node_def: _containers.RepeatedCompositeFieldContainer[NodeView]
    def __init__(self, node_def: _Optional[_Iterable[_Union[NodeView, _Mapping]]] = ...) -> None: ...
