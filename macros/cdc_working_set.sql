{% macro cdc_working_set() %}
    {#-
        The ingest batches (and records) this run's staging models read, per feed (ADR 0007,
        0020): rows (kind, feed, ingest_batch_id, source_file, record_offset) that `cdc run`
        decided once, before the build (python_udfs/working_set.py), passed in the environment
        variable CDC_WORKING_SET as JSON. Every staging model, int_staged_batches and
        int_working_set see the same rows. ('all', none, none, none, none), every batch, when
        the variable is unset (dbt run by hand, a Thrift Server) and in a dbt unit test. Empty
        at parse time, so the variable is not part of dbt's parse.
    -#}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- if graph.nodes is not defined -%}
        {{ return([('all', none, none, none, none)]) }}
    {%- endif -%}
    {{ return(fromjson(env_var('CDC_WORKING_SET', '[["all", null, null, null, null]]'))) }}
{% endmacro %}
