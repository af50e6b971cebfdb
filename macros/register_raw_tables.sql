{% macro register_raw_tables() %}
    {#-
        Register the staging job's raw Delta tables under <lake root>/raw/
        (python_udfs/raw_tables.py) as external tables in schema var('cdc_raw_schema'), once:
        a Delta table needs no repair, no partition added and no refresh, since every query
        reads its log's last version (the batches committed since the last run are in it, and
        a column a later release added is in its schema). A raw table an earlier release
        registered as plain parquet is registered again as Delta (ADR 0038). Called from
        on-run-start; returns a no-op statement.
    -#}
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
