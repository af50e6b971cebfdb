{% macro cdc_working_set() %}
    {#-
        The ingest batches (and records) this run's staging models read, per feed (ADR 0007):
        the rows (kind, feed, ingest_batch_id, source_file, record_offset) of int_working_set,
        which cdc_compute_working_set filled once at the start of this run, read when the
        calling model compiles. Every staging model and int_staged_batches see the same rows,
        whatever `cdc stage` commits meanwhile. ('all', none, none, none, none), every batch,
        when int_working_set does not exist or in a dbt unit test. Empty at parse time.
    -#}
    {%- if not execute -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set relation = cdc_model_relation('int_working_set') -%}
    {%- if relation is none -%}
        {{ return([('all', none, none, none, none)]) }}
    {%- endif -%}
    {%- set rows = [] -%}
    {%- for row in run_query('select kind, feed, ingest_batch_id, source_file, record_offset from ' ~ relation).rows -%}
        {%- do rows.append((row[0], row[1], row[2], row[3], row[4])) -%}
    {%- endfor -%}
    {{ return(rows) }}
{% endmacro %}
