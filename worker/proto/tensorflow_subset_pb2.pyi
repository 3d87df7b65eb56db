from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DataType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DT_INVALID: _ClassVar[DataType]
    DT_FLOAT: _ClassVar[DataType]
    DT_DOUBLE: _ClassVar[DataType]
    DT_INT32: _ClassVar[DataType]
    DT_UINT8: _ClassVar[DataType]
    DT_INT16: _ClassVar[DataType]
    DT_INT8: _ClassVar[DataType]
    DT_STRING: _ClassVar[DataType]
    DT_COMPLEX64: _ClassVar[DataType]
    DT_INT64: _ClassVar[DataType]
    DT_BOOL: _ClassVar[DataType]
    DT_QINT8: _ClassVar[DataType]
    DT_QUINT8: _ClassVar[DataType]
    DT_QINT32: _ClassVar[DataType]
    DT_BFLOAT16: _ClassVar[DataType]
    DT_QINT16: _ClassVar[DataType]
    DT_QUINT16: _ClassVar[DataType]
    DT_UINT16: _ClassVar[DataType]
    DT_COMPLEX128: _ClassVar[DataType]
    DT_HALF: _ClassVar[DataType]
    DT_RESOURCE: _ClassVar[DataType]
    DT_VARIANT: _ClassVar[DataType]
    DT_UINT32: _ClassVar[DataType]
    DT_UINT64: _ClassVar[DataType]
    DT_FLOAT8_E5M2: _ClassVar[DataType]
    DT_FLOAT8_E4M3FN: _ClassVar[DataType]
    DT_FLOAT8_E4M3FNUZ: _ClassVar[DataType]
    DT_FLOAT8_E4M3B11FNUZ: _ClassVar[DataType]
    DT_FLOAT8_E5M2FNUZ: _ClassVar[DataType]
    DT_INT4: _ClassVar[DataType]
    DT_UINT4: _ClassVar[DataType]
    DT_INT2: _ClassVar[DataType]
    DT_UINT2: _ClassVar[DataType]
    DT_FLOAT4_E2M1FN: _ClassVar[DataType]
    DT_FLOAT_REF: _ClassVar[DataType]
    DT_DOUBLE_REF: _ClassVar[DataType]
    DT_INT32_REF: _ClassVar[DataType]
    DT_UINT8_REF: _ClassVar[DataType]
    DT_INT16_REF: _ClassVar[DataType]
    DT_INT8_REF: _ClassVar[DataType]
    DT_STRING_REF: _ClassVar[DataType]
    DT_COMPLEX64_REF: _ClassVar[DataType]
    DT_INT64_REF: _ClassVar[DataType]
    DT_BOOL_REF: _ClassVar[DataType]
    DT_QINT8_REF: _ClassVar[DataType]
    DT_QUINT8_REF: _ClassVar[DataType]
    DT_QINT32_REF: _ClassVar[DataType]
    DT_BFLOAT16_REF: _ClassVar[DataType]
    DT_QINT16_REF: _ClassVar[DataType]
    DT_QUINT16_REF: _ClassVar[DataType]
    DT_UINT16_REF: _ClassVar[DataType]
    DT_COMPLEX128_REF: _ClassVar[DataType]
    DT_HALF_REF: _ClassVar[DataType]
    DT_RESOURCE_REF: _ClassVar[DataType]
    DT_VARIANT_REF: _ClassVar[DataType]
    DT_UINT32_REF: _ClassVar[DataType]
    DT_UINT64_REF: _ClassVar[DataType]
    DT_FLOAT8_E5M2_REF: _ClassVar[DataType]
    DT_FLOAT8_E4M3FN_REF: _ClassVar[DataType]
    DT_FLOAT8_E4M3FNUZ_REF: _ClassVar[DataType]
    DT_FLOAT8_E4M3B11FNUZ_REF: _ClassVar[DataType]
    DT_FLOAT8_E5M2FNUZ_REF: _ClassVar[DataType]
    DT_INT4_REF: _ClassVar[DataType]
    DT_UINT4_REF: _ClassVar[DataType]
    DT_INT2_REF: _ClassVar[DataType]
    DT_UINT2_REF: _ClassVar[DataType]
    DT_FLOAT4_E2M1FN_REF: _ClassVar[DataType]
DT_INVALID: DataType
DT_FLOAT: DataType
DT_DOUBLE: DataType
DT_INT32: DataType
DT_UINT8: DataType
DT_INT16: DataType
DT_INT8: DataType
DT_STRING: DataType
DT_COMPLEX64: DataType
DT_INT64: DataType
DT_BOOL: DataType
DT_QINT8: DataType
DT_QUINT8: DataType
DT_QINT32: DataType
DT_BFLOAT16: DataType
DT_QINT16: DataType
DT_QUINT16: DataType
DT_UINT16: DataType
DT_COMPLEX128: DataType
DT_HALF: DataType
DT_RESOURCE: DataType
DT_VARIANT: DataType
DT_UINT32: DataType
DT_UINT64: DataType
DT_FLOAT8_E5M2: DataType
DT_FLOAT8_E4M3FN: DataType
DT_FLOAT8_E4M3FNUZ: DataType
DT_FLOAT8_E4M3B11FNUZ: DataType
DT_FLOAT8_E5M2FNUZ: DataType
DT_INT4: DataType
DT_UINT4: DataType
DT_INT2: DataType
DT_UINT2: DataType
DT_FLOAT4_E2M1FN: DataType
DT_FLOAT_REF: DataType
DT_DOUBLE_REF: DataType
DT_INT32_REF: DataType
DT_UINT8_REF: DataType
DT_INT16_REF: DataType
DT_INT8_REF: DataType
DT_STRING_REF: DataType
DT_COMPLEX64_REF: DataType
DT_INT64_REF: DataType
DT_BOOL_REF: DataType
DT_QINT8_REF: DataType
DT_QUINT8_REF: DataType
DT_QINT32_REF: DataType
DT_BFLOAT16_REF: DataType
DT_QINT16_REF: DataType
DT_QUINT16_REF: DataType
DT_UINT16_REF: DataType
DT_COMPLEX128_REF: DataType
DT_HALF_REF: DataType
DT_RESOURCE_REF: DataType
DT_VARIANT_REF: DataType
DT_UINT32_REF: DataType
DT_UINT64_REF: DataType
DT_FLOAT8_E5M2_REF: DataType
DT_FLOAT8_E4M3FN_REF: DataType
DT_FLOAT8_E4M3FNUZ_REF: DataType
DT_FLOAT8_E4M3B11FNUZ_REF: DataType
DT_FLOAT8_E5M2FNUZ_REF: DataType
DT_INT4_REF: DataType
DT_UINT4_REF: DataType
DT_INT2_REF: DataType
DT_UINT2_REF: DataType
DT_FLOAT4_E2M1FN_REF: DataType

class VersionDef(_message.Message):
    __slots__ = ("producer", "min_consumer", "bad_consumers")
    PRODUCER_FIELD_NUMBER: _ClassVar[int]
    MIN_CONSUMER_FIELD_NUMBER: _ClassVar[int]
    BAD_CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    producer: int
    min_consumer: int
    bad_consumers: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, producer: _Optional[int] = ..., min_consumer: _Optional[int] = ..., bad_consumers: _Optional[_Iterable[int]] = ...) -> None: ...

class TensorShapeProto(_message.Message):
    __slots__ = ("dim", "unknown_rank")
    class Dim(_message.Message):
        __slots__ = ("size", "name")
        SIZE_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        size: int
        name: str
        def __init__(self, size: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...
    DIM_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_RANK_FIELD_NUMBER: _ClassVar[int]
    dim: _containers.RepeatedCompositeFieldContainer[TensorShapeProto.Dim]
    unknown_rank: bool
    def __init__(self, dim: _Optional[_Iterable[_Union[TensorShapeProto.Dim, _Mapping]]] = ..., unknown_rank: _Optional[bool] = ...) -> None: ...

class TensorProto(_message.Message):
    __slots__ = ("dtype", "tensor_shape", "version_number", "tensor_content", "half_val", "float_val", "double_val", "int_val", "string_val", "scomplex_val", "int64_val", "bool_val", "dcomplex_val", "uint32_val", "uint64_val")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_SHAPE_FIELD_NUMBER: _ClassVar[int]
    VERSION_NUMBER_FIELD_NUMBER: _ClassVar[int]
    TENSOR_CONTENT_FIELD_NUMBER: _ClassVar[int]
    HALF_VAL_FIELD_NUMBER: _ClassVar[int]
    FLOAT_VAL_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_VAL_FIELD_NUMBER: _ClassVar[int]
    INT_VAL_FIELD_NUMBER: _ClassVar[int]
    STRING_VAL_FIELD_NUMBER: _ClassVar[int]
    SCOMPLEX_VAL_FIELD_NUMBER: _ClassVar[int]
    INT64_VAL_FIELD_NUMBER: _ClassVar[int]
    BOOL_VAL_FIELD_NUMBER: _ClassVar[int]
    DCOMPLEX_VAL_FIELD_NUMBER: _ClassVar[int]
    UINT32_VAL_FIELD_NUMBER: _ClassVar[int]
    UINT64_VAL_FIELD_NUMBER: _ClassVar[int]
    dtype: DataType
    tensor_shape: TensorShapeProto
    version_number: int
    tensor_content: bytes
    half_val: _containers.RepeatedScalarFieldContainer[int]
    float_val: _containers.RepeatedScalarFieldContainer[float]
    double_val: _containers.RepeatedScalarFieldContainer[float]
    int_val: _containers.RepeatedScalarFieldContainer[int]
    string_val: _containers.RepeatedScalarFieldContainer[bytes]
    scomplex_val: _containers.RepeatedScalarFieldContainer[float]
    int64_val: _containers.RepeatedScalarFieldContainer[int]
    bool_val: _containers.RepeatedScalarFieldContainer[bool]
    dcomplex_val: _containers.RepeatedScalarFieldContainer[float]
    uint32_val: _containers.RepeatedScalarFieldContainer[int]
    uint64_val: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, dtype: _Optional[_Union[DataType, str]] = ..., tensor_shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ..., version_number: _Optional[int] = ..., tensor_content: _Optional[bytes] = ..., half_val: _Optional[_Iterable[int]] = ..., float_val: _Optional[_Iterable[float]] = ..., double_val: _Optional[_Iterable[float]] = ..., int_val: _Optional[_Iterable[int]] = ..., string_val: _Optional[_Iterable[bytes]] = ..., scomplex_val: _Optional[_Iterable[float]] = ..., int64_val: _Optional[_Iterable[int]] = ..., bool_val: _Optional[_Iterable[bool]] = ..., dcomplex_val: _Optional[_Iterable[float]] = ..., uint32_val: _Optional[_Iterable[int]] = ..., uint64_val: _Optional[_Iterable[int]] = ...) -> None: ...

class AttrValue(_message.Message):
    __slots__ = ("s", "i", "f", "b", "type", "shape", "tensor", "list", "func", "placeholder")
    class ListValue(_message.Message):
        __slots__ = ("s", "i", "f", "b", "type", "shape", "tensor", "func")
        S_FIELD_NUMBER: _ClassVar[int]
        I_FIELD_NUMBER: _ClassVar[int]
        F_FIELD_NUMBER: _ClassVar[int]
        B_FIELD_NUMBER: _ClassVar[int]
        TYPE_FIELD_NUMBER: _ClassVar[int]
        SHAPE_FIELD_NUMBER: _ClassVar[int]
        TENSOR_FIELD_NUMBER: _ClassVar[int]
        FUNC_FIELD_NUMBER: _ClassVar[int]
        s: _containers.RepeatedScalarFieldContainer[bytes]
        i: _containers.RepeatedScalarFieldContainer[int]
        f: _containers.RepeatedScalarFieldContainer[float]
        b: _containers.RepeatedScalarFieldContainer[bool]
        type: _containers.RepeatedScalarFieldContainer[DataType]
        shape: _containers.RepeatedCompositeFieldContainer[TensorShapeProto]
        tensor: _containers.RepeatedCompositeFieldContainer[TensorProto]
        func: _containers.RepeatedCompositeFieldContainer[NameAttrList]
        def __init__(self, s: _Optional[_Iterable[bytes]] = ..., i: _Optional[_Iterable[int]] = ..., f: _Optional[_Iterable[float]] = ..., b: _Optional[_Iterable[bool]] = ..., type: _Optional[_Iterable[_Union[DataType, str]]] = ..., shape: _Optional[_Iterable[_Union[TensorShapeProto, _Mapping]]] = ..., tensor: _Optional[_Iterable[_Union[TensorProto, _Mapping]]] = ..., func: _Optional[_Iterable[_Union[NameAttrList, _Mapping]]] = ...) -> None: ...
    S_FIELD_NUMBER: _ClassVar[int]
    I_FIELD_NUMBER: _ClassVar[int]
    F_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    LIST_FIELD_NUMBER: _ClassVar[int]
    FUNC_FIELD_NUMBER: _ClassVar[int]
    PLACEHOLDER_FIELD_NUMBER: _ClassVar[int]
    s: bytes
    i: int
    f: float
    b: bool
    type: DataType
    shape: TensorShapeProto
    tensor: TensorProto
    list: AttrValue.ListValue
    func: NameAttrList
    placeholder: str
    def __init__(self, s: _Optional[bytes] = ..., i: _Optional[int] = ..., f: _Optional[float] = ..., b: _Optional[bool] = ..., type: _Optional[_Union[DataType, str]] = ..., shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ..., tensor: _Optional[_Union[TensorProto, _Mapping]] = ..., list: _Optional[_Union[AttrValue.ListValue, _Mapping]] = ..., func: _Optional[_Union[NameAttrList, _Mapping]] = ..., placeholder: _Optional[str] = ...) -> None: ...

class NameAttrList(_message.Message):
    __slots__ = ("name", "attr")
    class AttrEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: AttrValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[AttrValue, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    ATTR_FIELD_NUMBER: _ClassVar[int]
    name: str
    attr: _containers.MessageMap[str, AttrValue]
    def __init__(self, name: _Optional[str] = ..., attr: _Optional[_Mapping[str, AttrValue]] = ...) -> None: ...

class NodeDef(_message.Message):
    __slots__ = ("name", "op", "input", "device", "attr")
    class AttrEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: AttrValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[AttrValue, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    ATTR_FIELD_NUMBER: _ClassVar[int]
    name: str
    op: str
    input: _containers.RepeatedScalarFieldContainer[str]
    device: str
    attr: _containers.MessageMap[str, AttrValue]
    def __init__(self, name: _Optional[str] = ..., op: _Optional[str] = ..., input: _Optional[_Iterable[str]] = ..., device: _Optional[str] = ..., attr: _Optional[_Mapping[str, AttrValue]] = ...) -> None: ...

class OpDef(_message.Message):
    __slots__ = ("name", "input_arg", "output_arg", "control_output", "attr", "deprecation", "summary", "description", "is_commutative", "is_aggregate", "is_stateful", "allows_uninitialized_input", "is_distributed_communication")
    class ArgDef(_message.Message):
        __slots__ = ("name", "description", "type", "type_attr", "number_attr", "type_list_attr", "is_ref")
        NAME_FIELD_NUMBER: _ClassVar[int]
        DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
        TYPE_FIELD_NUMBER: _ClassVar[int]
        TYPE_ATTR_FIELD_NUMBER: _ClassVar[int]
        NUMBER_ATTR_FIELD_NUMBER: _ClassVar[int]
        TYPE_LIST_ATTR_FIELD_NUMBER: _ClassVar[int]
        IS_REF_FIELD_NUMBER: _ClassVar[int]
        name: str
        description: str
        type: DataType
        type_attr: str
        number_attr: str
        type_list_attr: str
        is_ref: bool
        def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., type: _Optional[_Union[DataType, str]] = ..., type_attr: _Optional[str] = ..., number_attr: _Optional[str] = ..., type_list_attr: _Optional[str] = ..., is_ref: _Optional[bool] = ...) -> None: ...
    class AttrDef(_message.Message):
        __slots__ = ("name", "type", "default_value", "description", "has_minimum", "minimum", "allowed_values")
        NAME_FIELD_NUMBER: _ClassVar[int]
        TYPE_FIELD_NUMBER: _ClassVar[int]
        DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
        DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
        HAS_MINIMUM_FIELD_NUMBER: _ClassVar[int]
        MINIMUM_FIELD_NUMBER: _ClassVar[int]
        ALLOWED_VALUES_FIELD_NUMBER: _ClassVar[int]
        name: str
        type: str
        default_value: AttrValue
        description: str
        has_minimum: bool
        minimum: int
        allowed_values: AttrValue
        def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., default_value: _Optional[_Union[AttrValue, _Mapping]] = ..., description: _Optional[str] = ..., has_minimum: _Optional[bool] = ..., minimum: _Optional[int] = ..., allowed_values: _Optional[_Union[AttrValue, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_ARG_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_ARG_FIELD_NUMBER: _ClassVar[int]
    CONTROL_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ATTR_FIELD_NUMBER: _ClassVar[int]
    DEPRECATION_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    IS_COMMUTATIVE_FIELD_NUMBER: _ClassVar[int]
    IS_AGGREGATE_FIELD_NUMBER: _ClassVar[int]
    IS_STATEFUL_FIELD_NUMBER: _ClassVar[int]
    ALLOWS_UNINITIALIZED_INPUT_FIELD_NUMBER: _ClassVar[int]
    IS_DISTRIBUTED_COMMUNICATION_FIELD_NUMBER: _ClassVar[int]
    name: str
    input_arg: _containers.RepeatedCompositeFieldContainer[OpDef.ArgDef]
    output_arg: _containers.RepeatedCompositeFieldContainer[OpDef.ArgDef]
    control_output: _containers.RepeatedScalarFieldContainer[str]
    attr: _containers.RepeatedCompositeFieldContainer[OpDef.AttrDef]
    deprecation: OpDeprecation
    summary: str
    description: str
    is_commutative: bool
    is_aggregate: bool
    is_stateful: bool
    allows_uninitialized_input: bool
    is_distributed_communication: bool
    def __init__(self, name: _Optional[str] = ..., input_arg: _Optional[_Iterable[_Union[OpDef.ArgDef, _Mapping]]] = ..., output_arg: _Optional[_Iterable[_Union[OpDef.ArgDef, _Mapping]]] = ..., control_output: _Optional[_Iterable[str]] = ..., attr: _Optional[_Iterable[_Union[OpDef.AttrDef, _Mapping]]] = ..., deprecation: _Optional[_Union[OpDeprecation, _Mapping]] = ..., summary: _Optional[str] = ..., description: _Optional[str] = ..., is_commutative: _Optional[bool] = ..., is_aggregate: _Optional[bool] = ..., is_stateful: _Optional[bool] = ..., allows_uninitialized_input: _Optional[bool] = ..., is_distributed_communication: _Optional[bool] = ...) -> None: ...

class OpDeprecation(_message.Message):
    __slots__ = ("version", "explanation")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    version: int
    explanation: str
    def __init__(self, version: _Optional[int] = ..., explanation: _Optional[str] = ...) -> None: ...

class OpList(_message.Message):
    __slots__ = ("op",)
    OP_FIELD_NUMBER: _ClassVar[int]
    op: _containers.RepeatedCompositeFieldContainer[OpDef]
    def __init__(self, op: _Optional[_Iterable[_Union[OpDef, _Mapping]]] = ...) -> None: ...

class FunctionDefLibrary(_message.Message):
    __slots__ = ("function", "gradient")
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    GRADIENT_FIELD_NUMBER: _ClassVar[int]
    function: _containers.RepeatedCompositeFieldContainer[FunctionDef]
    gradient: _containers.RepeatedCompositeFieldContainer[GradientDef]
    def __init__(self, function: _Optional[_Iterable[_Union[FunctionDef, _Mapping]]] = ..., gradient: _Optional[_Iterable[_Union[GradientDef, _Mapping]]] = ...) -> None: ...

class FunctionDef(_message.Message):
    __slots__ = ("signature", "attr", "node_def", "ret", "control_ret")
    class AttrEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: AttrValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[AttrValue, _Mapping]] = ...) -> None: ...
    class RetEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class ControlRetEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    ATTR_FIELD_NUMBER: _ClassVar[int]
    NODE_DEF_FIELD_NUMBER: _ClassVar[int]
    RET_FIELD_NUMBER: _ClassVar[int]
    CONTROL_RET_FIELD_NUMBER: _ClassVar[int]
    signature: OpDef
    attr: _containers.MessageMap[str, AttrValue]
    node_def: _containers.RepeatedCompositeFieldContainer[NodeDef]
    ret: _containers.ScalarMap[str, str]
    control_ret: _containers.ScalarMap[str, str]
    def __init__(self, signature: _Optional[_Union[OpDef, _Mapping]] = ..., attr: _Optional[_Mapping[str, AttrValue]] = ..., node_def: _Optional[_Iterable[_Union[NodeDef, _Mapping]]] = ..., ret: _Optional[_Mapping[str, str]] = ..., control_ret: _Optional[_Mapping[str, str]] = ...) -> None: ...

class GradientDef(_message.Message):
    __slots__ = ("function_name", "gradient_func")
    FUNCTION_NAME_FIELD_NUMBER: _ClassVar[int]
    GRADIENT_FUNC_FIELD_NUMBER: _ClassVar[int]
    function_name: str
    gradient_func: str
    def __init__(self, function_name: _Optional[str] = ..., gradient_func: _Optional[str] = ...) -> None: ...

class GraphDef(_message.Message):
    __slots__ = ("node", "versions", "version", "library")
    NODE_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LIBRARY_FIELD_NUMBER: _ClassVar[int]
    node: _containers.RepeatedCompositeFieldContainer[NodeDef]
    versions: VersionDef
    version: int
    library: FunctionDefLibrary
    def __init__(self, node: _Optional[_Iterable[_Union[NodeDef, _Mapping]]] = ..., versions: _Optional[_Union[VersionDef, _Mapping]] = ..., version: _Optional[int] = ..., library: _Optional[_Union[FunctionDefLibrary, _Mapping]] = ...) -> None: ...

class MetaGraphDef(_message.Message):
    __slots__ = ("meta_info_def", "graph_def", "saver_def", "collection_def", "signature_def", "asset_file_def", "object_graph_def")
    class MetaInfoDef(_message.Message):
        __slots__ = ("meta_graph_version", "stripped_op_list", "tags", "tensorflow_version", "tensorflow_git_version", "stripped_default_attrs", "function_aliases")
        class FunctionAliasesEntry(_message.Message):
            __slots__ = ("key", "value")
            KEY_FIELD_NUMBER: _ClassVar[int]
            VALUE_FIELD_NUMBER: _ClassVar[int]
            key: str
            value: str
            def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
        META_GRAPH_VERSION_FIELD_NUMBER: _ClassVar[int]
        STRIPPED_OP_LIST_FIELD_NUMBER: _ClassVar[int]
        TAGS_FIELD_NUMBER: _ClassVar[int]
        TENSORFLOW_VERSION_FIELD_NUMBER: _ClassVar[int]
        TENSORFLOW_GIT_VERSION_FIELD_NUMBER: _ClassVar[int]
        STRIPPED_DEFAULT_ATTRS_FIELD_NUMBER: _ClassVar[int]
        FUNCTION_ALIASES_FIELD_NUMBER: _ClassVar[int]
        meta_graph_version: str
        stripped_op_list: OpList
        tags: _containers.RepeatedScalarFieldContainer[str]
        tensorflow_version: str
        tensorflow_git_version: str
        stripped_default_attrs: bool
        function_aliases: _containers.ScalarMap[str, str]
        def __init__(self, meta_graph_version: _Optional[str] = ..., stripped_op_list: _Optional[_Union[OpList, _Mapping]] = ..., tags: _Optional[_Iterable[str]] = ..., tensorflow_version: _Optional[str] = ..., tensorflow_git_version: _Optional[str] = ..., stripped_default_attrs: _Optional[bool] = ..., function_aliases: _Optional[_Mapping[str, str]] = ...) -> None: ...
    class CollectionDefEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: CollectionDef
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[CollectionDef, _Mapping]] = ...) -> None: ...
    class SignatureDefEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: SignatureDef
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[SignatureDef, _Mapping]] = ...) -> None: ...
    META_INFO_DEF_FIELD_NUMBER: _ClassVar[int]
    GRAPH_DEF_FIELD_NUMBER: _ClassVar[int]
    SAVER_DEF_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_DEF_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_DEF_FIELD_NUMBER: _ClassVar[int]
    ASSET_FILE_DEF_FIELD_NUMBER: _ClassVar[int]
    OBJECT_GRAPH_DEF_FIELD_NUMBER: _ClassVar[int]
    meta_info_def: MetaGraphDef.MetaInfoDef
    graph_def: GraphDef
    saver_def: SaverDef
    collection_def: _containers.MessageMap[str, CollectionDef]
    signature_def: _containers.MessageMap[str, SignatureDef]
    asset_file_def: _containers.RepeatedCompositeFieldContainer[AssetFileDef]
    object_graph_def: SavedObjectGraph
    def __init__(self, meta_info_def: _Optional[_Union[MetaGraphDef.MetaInfoDef, _Mapping]] = ..., graph_def: _Optional[_Union[GraphDef, _Mapping]] = ..., saver_def: _Optional[_Union[SaverDef, _Mapping]] = ..., collection_def: _Optional[_Mapping[str, CollectionDef]] = ..., signature_def: _Optional[_Mapping[str, SignatureDef]] = ..., asset_file_def: _Optional[_Iterable[_Union[AssetFileDef, _Mapping]]] = ..., object_graph_def: _Optional[_Union[SavedObjectGraph, _Mapping]] = ...) -> None: ...

class SavedObjectGraph(_message.Message):
    __slots__ = ("nodes",)
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[SavedObject]
    def __init__(self, nodes: _Optional[_Iterable[_Union[SavedObject, _Mapping]]] = ...) -> None: ...

class SavedObject(_message.Message):
    __slots__ = ("slot_variables", "user_object")
    class SlotVariableReference(_message.Message):
        __slots__ = ("original_variable_node_id", "slot_name", "slot_variable_node_id")
        ORIGINAL_VARIABLE_NODE_ID_FIELD_NUMBER: _ClassVar[int]
        SLOT_NAME_FIELD_NUMBER: _ClassVar[int]
        SLOT_VARIABLE_NODE_ID_FIELD_NUMBER: _ClassVar[int]
        original_variable_node_id: int
        slot_name: str
        slot_variable_node_id: int
        def __init__(self, original_variable_node_id: _Optional[int] = ..., slot_name: _Optional[str] = ..., slot_variable_node_id: _Optional[int] = ...) -> None: ...
    SLOT_VARIABLES_FIELD_NUMBER: _ClassVar[int]
    USER_OBJECT_FIELD_NUMBER: _ClassVar[int]
    slot_variables: _containers.RepeatedCompositeFieldContainer[SavedObject.SlotVariableReference]
    user_object: SavedUserObject
    def __init__(self, slot_variables: _Optional[_Iterable[_Union[SavedObject.SlotVariableReference, _Mapping]]] = ..., user_object: _Optional[_Union[SavedUserObject, _Mapping]] = ...) -> None: ...

class SavedUserObject(_message.Message):
    __slots__ = ("identifier", "version")
    IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    identifier: str
    version: VersionDef
    def __init__(self, identifier: _Optional[str] = ..., version: _Optional[_Union[VersionDef, _Mapping]] = ...) -> None: ...

class SaverDef(_message.Message):
    __slots__ = ("filename_tensor_name", "save_tensor_name", "restore_op_name")
    FILENAME_TENSOR_NAME_FIELD_NUMBER: _ClassVar[int]
    SAVE_TENSOR_NAME_FIELD_NUMBER: _ClassVar[int]
    RESTORE_OP_NAME_FIELD_NUMBER: _ClassVar[int]
    filename_tensor_name: str
    save_tensor_name: str
    restore_op_name: str
    def __init__(self, filename_tensor_name: _Optional[str] = ..., save_tensor_name: _Optional[str] = ..., restore_op_name: _Optional[str] = ...) -> None: ...

class Any(_message.Message):
    __slots__ = ("type_url", "value")
    TYPE_URL_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    type_url: str
    value: bytes
    def __init__(self, type_url: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class CollectionDef(_message.Message):
    __slots__ = ("node_list", "bytes_list", "any_list")
    class NodeList(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, value: _Optional[_Iterable[str]] = ...) -> None: ...
    class BytesList(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: _containers.RepeatedScalarFieldContainer[bytes]
        def __init__(self, value: _Optional[_Iterable[bytes]] = ...) -> None: ...
    class AnyList(_message.Message):
        __slots__ = ("value",)
        VALUE_FIELD_NUMBER: _ClassVar[int]
        value: _containers.RepeatedCompositeFieldContainer[Any]
        def __init__(self, value: _Optional[_Iterable[_Union[Any, _Mapping]]] = ...) -> None: ...
    NODE_LIST_FIELD_NUMBER: _ClassVar[int]
    BYTES_LIST_FIELD_NUMBER: _ClassVar[int]
    ANY_LIST_FIELD_NUMBER: _ClassVar[int]
    node_list: CollectionDef.NodeList
    bytes_list: CollectionDef.BytesList
    any_list: CollectionDef.AnyList
    def __init__(self, node_list: _Optional[_Union[CollectionDef.NodeList, _Mapping]] = ..., bytes_list: _Optional[_Union[CollectionDef.BytesList, _Mapping]] = ..., any_list: _Optional[_Union[CollectionDef.AnyList, _Mapping]] = ...) -> None: ...

class VariableDef(_message.Message):
    __slots__ = ("variable_name", "initializer_name", "snapshot_name", "is_resource", "initial_value_name")
    VARIABLE_NAME_FIELD_NUMBER: _ClassVar[int]
    INITIALIZER_NAME_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_NAME_FIELD_NUMBER: _ClassVar[int]
    IS_RESOURCE_FIELD_NUMBER: _ClassVar[int]
    INITIAL_VALUE_NAME_FIELD_NUMBER: _ClassVar[int]
    variable_name: str
    initializer_name: str
    snapshot_name: str
    is_resource: bool
    initial_value_name: str
    def __init__(self, variable_name: _Optional[str] = ..., initializer_name: _Optional[str] = ..., snapshot_name: _Optional[str] = ..., is_resource: _Optional[bool] = ..., initial_value_name: _Optional[str] = ...) -> None: ...

class AssetFileDef(_message.Message):
    __slots__ = ("tensor_info", "filename")
    TENSOR_INFO_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    tensor_info: TensorInfo
    filename: str
    def __init__(self, tensor_info: _Optional[_Union[TensorInfo, _Mapping]] = ..., filename: _Optional[str] = ...) -> None: ...

class TensorInfo(_message.Message):
    __slots__ = ("name", "coo_sparse", "dtype", "tensor_shape")
    class CooSparse(_message.Message):
        __slots__ = ("values_tensor_name", "indices_tensor_name", "dense_shape_tensor_name")
        VALUES_TENSOR_NAME_FIELD_NUMBER: _ClassVar[int]
        INDICES_TENSOR_NAME_FIELD_NUMBER: _ClassVar[int]
        DENSE_SHAPE_TENSOR_NAME_FIELD_NUMBER: _ClassVar[int]
        values_tensor_name: str
        indices_tensor_name: str
        dense_shape_tensor_name: str
        def __init__(self, values_tensor_name: _Optional[str] = ..., indices_tensor_name: _Optional[str] = ..., dense_shape_tensor_name: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    COO_SPARSE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_SHAPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    coo_sparse: TensorInfo.CooSparse
    dtype: DataType
    tensor_shape: TensorShapeProto
    def __init__(self, name: _Optional[str] = ..., coo_sparse: _Optional[_Union[TensorInfo.CooSparse, _Mapping]] = ..., dtype: _Optional[_Union[DataType, str]] = ..., tensor_shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ...) -> None: ...

class SignatureDef(_message.Message):
    __slots__ = ("inputs", "outputs", "method_name")
    class InputsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: TensorInfo
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[TensorInfo, _Mapping]] = ...) -> None: ...
    class OutputsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: TensorInfo
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[TensorInfo, _Mapping]] = ...) -> None: ...
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    METHOD_NAME_FIELD_NUMBER: _ClassVar[int]
    inputs: _containers.MessageMap[str, TensorInfo]
    outputs: _containers.MessageMap[str, TensorInfo]
    method_name: str
    def __init__(self, inputs: _Optional[_Mapping[str, TensorInfo]] = ..., outputs: _Optional[_Mapping[str, TensorInfo]] = ..., method_name: _Optional[str] = ...) -> None: ...

class SavedModel(_message.Message):
    __slots__ = ("saved_model_schema_version", "meta_graphs")
    SAVED_MODEL_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    META_GRAPHS_FIELD_NUMBER: _ClassVar[int]
    saved_model_schema_version: int
    meta_graphs: _containers.RepeatedCompositeFieldContainer[MetaGraphDef]
    def __init__(self, saved_model_schema_version: _Optional[int] = ..., meta_graphs: _Optional[_Iterable[_Union[MetaGraphDef, _Mapping]]] = ...) -> None: ...

class BundleHeaderProto(_message.Message):
    __slots__ = ("num_shards", "endianness", "version")
    class Endianness(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        LITTLE: _ClassVar[BundleHeaderProto.Endianness]
        BIG: _ClassVar[BundleHeaderProto.Endianness]
    LITTLE: BundleHeaderProto.Endianness
    BIG: BundleHeaderProto.Endianness
    NUM_SHARDS_FIELD_NUMBER: _ClassVar[int]
    ENDIANNESS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    num_shards: int
    endianness: BundleHeaderProto.Endianness
    version: VersionDef
    def __init__(self, num_shards: _Optional[int] = ..., endianness: _Optional[_Union[BundleHeaderProto.Endianness, str]] = ..., version: _Optional[_Union[VersionDef, _Mapping]] = ...) -> None: ...

class BundleEntryProto(_message.Message):
    __slots__ = ("dtype", "shape", "shard_id", "offset", "size", "crc32c")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    SHARD_ID_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    CRC32C_FIELD_NUMBER: _ClassVar[int]
    dtype: DataType
    shape: TensorShapeProto
    shard_id: int
    offset: int
    size: int
    crc32c: int
    def __init__(self, dtype: _Optional[_Union[DataType, str]] = ..., shape: _Optional[_Union[TensorShapeProto, _Mapping]] = ..., shard_id: _Optional[int] = ..., offset: _Optional[int] = ..., size: _Optional[int] = ..., crc32c: _Optional[int] = ...) -> None: ...
