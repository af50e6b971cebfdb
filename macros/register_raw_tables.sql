{% macro register_raw_tables() %}
    {#-
        Register the staging job's raw Delta tables under <lake root>/raw/ (python_udfs/
        raw_tables.py) as external tables in schema var('cdc_raw_schema'). A Delta table needs
        no repair or refresh: every query reads its log's current version, so the batches
        committed since the last run are there. A raw table an earlier version registered as
        plain parquet is registered again as Delta (ADR 0018). Called from on-run-start;
        returns a no-op statement.
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
            {% do run_query(
                'create table if not exists ' ~ relation
                ~ " using delta location '" ~ lake ~ '/raw/' ~ table_name ~ "'"
            ) %}
        {% endfor %}
    {% endif %}
    select 1 as raw_tables_registered
{% endmacro %}


{% macro cdc_raw_table_names() %}
    {#-
        The raw tables the staging job writes (python_udfs/staging.py RAW_TABLES): the three
        every feed shares, and raw_<format> for each of cdc_format_names().
    -#}
    {%- set names = ['raw_ingested_files', 'raw_rejects', 'raw_metadata'] -%}
    {%- for format in cdc_format_names() -%}
        {%- do names.append('raw_' ~ format) -%}
    {%- endfor -%}
    {{ return(names) }}
{% endmacro %}
