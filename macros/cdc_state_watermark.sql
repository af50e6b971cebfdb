{% macro cdc_state_watermark() %}
    {#-
        The last generation whose change_log rows the state models have applied: the table
        property cdc.state_generation of int_key_state (its post-hook sets it once the state
        is written, see cdc_state_watermark_hook), read from the metastore when the calling
        model compiles. A lake whose int_key_state has no such property yet (built before it
        existed) gives max(state_generation) of its rows. An empty string (every change is new)
        with --full-refresh, and when int_key_state or the version store int_history_versions
        does not exist yet. Raises a compiler error naming the fix (`cdc run -- --full-refresh`)
        when int_key_state has no version_count column (written by a release without it).
    -#}
    {%- if not execute or flags.FULL_REFRESH -%}
        {{ return('') }}
    {%- endif -%}
    {%- set state = adapter.get_relation(database=this.database, schema=this.schema, identifier='int_key_state') -%}
    {%- set versions = adapter.get_relation(database=this.database, schema=this.schema, identifier='int_history_versions') -%}
    {%- if state is none or versions is none -%}
        {{ return('') }}
    {%- endif -%}
    {%- if not cdc_relation_has_column(state, 'version_count') -%}
        {{ exceptions.raise_compiler_error(
            state ~ ' was written by an earlier release of cdc_changelog: it has no version_count '
            ~ 'column, which this release keeps per key. Rebuild the state models once with '
            ~ '`cdc run -- --full-refresh` (every model again from the raw tables).'
        ) }}
    {%- endif -%}
    {%- set recorded = [] -%}
    {%- for key, value in run_query('show tblproperties ' ~ state).rows if key == 'cdc.state_generation' -%}
        {%- do recorded.append(value) -%}
    {%- endfor -%}
    {%- if recorded -%}
        {{ return(recorded[0]) }}
    {%- endif -%}
    {%- set rows = run_query('select coalesce(max(state_generation), \'\') as generation from ' ~ state).rows -%}
    {{ return(rows[0][0] if rows else '') }}
{% endmacro %}
