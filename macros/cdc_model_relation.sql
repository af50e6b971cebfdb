{% macro cdc_model_relation(model_name) %}
    {#-
        The relation of a model of this project by name, looked up in the graph (not ref(), so a
        test may read a model it does not depend on). None when it does not exist yet, and in
        a dbt unit test (whose context has no graph: its inputs are the mocked rows).
    -#}
    {%- if graph.nodes is not defined -%}
        {{ return(none) }}
    {%- endif -%}
    {%- for node in graph.nodes.values() -%}
        {%- if node.resource_type == 'model' and node.name == model_name -%}
            {{ return(adapter.get_relation(database=node.database, schema=node.schema, identifier=node.alias)) }}
        {%- endif -%}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}
