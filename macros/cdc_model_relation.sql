{% macro cdc_model_relation(model_name) %}
    {#-
        The relation of a model of this project by name, built from the graph's schema and alias
        (not ref(), so a test may read a model it does not depend on; no metastore lookup, so
        nothing is read when it compiles). None in a dbt unit test (whose context has no graph:
        its inputs are the mocked rows) and for a name that is no model.
    -#}
    {%- if graph.nodes is not defined -%}
        {{ return(none) }}
    {%- endif -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.name == model_name -%}
            {{ return(api.Relation.create(schema=node.schema, identifier=node.alias, type='table')) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}
