{% macro register_raw_tables() %}
    {#- Registers the raw Delta tables, once (macros/_macros.yml). -#}
    {% if execute %}
        {% set lake = env_var('CDC_LAKE_ROOT', var('cdc_lake_root')) %}
        {% if not lake.startswith('/') %}
            {% set lake = env_var('PWD', '.') ~ '/' ~ lake %}
        {% endif %}
        {% set raw_schema = var('cdc_raw_schema') %}
        {% do run_query('create database if not exists ' ~ raw_schema) %}
        {% for table_name in cdc_raw_table_names() %}
            {% set relation = raw_schema ~ '.' ~ table_name %}
            {% set existing = adapter.get_relation(database=none, schema=raw_schema, identifier=table_name) %}
            {% if existing is not none and not existing.is_delta %}
                {% do run_query('drop table ' ~ relation) %}
            {% endif %}
            {% if existing is none or not existing.is_delta %}
                {% do run_query(
                    'create table if not exists ' ~ relation
                    ~ " using delta location '" ~ lake ~ '/raw/' ~ table_name ~ "'"
                ) %}
            {% endif %}
        {% endfor %}
    {% endif %}
    select 1 as raw_tables_registered
{% endmacro %}
