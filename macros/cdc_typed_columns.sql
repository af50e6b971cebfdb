{% macro cdc_typed_columns(node) %}
    {#-
        The catalog columns a typed model casts (ADR 0035): the columns of `node` (a model, as
        `model` or an entry of `graph.nodes`) whose YAML has a `data_type`, in YAML order, each
        as a dict of `name` (the view's column), `source_column` (the key of the mart's `row`:
        `config.meta.source_column`, else `name`) and `data_type`.
    -#}
    {%- set columns = [] -%}
    {%- for column in node.columns.values() if column.data_type -%}
        {%- do columns.append({
            'name': column.name,
            'source_column': column.config.meta.get('source_column', column.name),
            'data_type': column.data_type,
        }) -%}
    {%- endfor -%}
    {{ return(columns) }}
{% endmacro %}
