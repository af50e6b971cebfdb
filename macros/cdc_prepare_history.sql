{% macro cdc_prepare_history() %}
    {#- Makes the previous runs' history readable as a source (macros/_macros.yml). -#}
    {%- set relation = source('cdc_state', 'history') -%}
    {%- set node = graph.nodes.get('model.cdc_changelog.history') if execute else none -%}
    {%- if node is none -%}
        select 1 as history_prepared
    {%- else -%}
        {%- set existing = adapter.get_relation(
            database=relation.database, schema=relation.schema, identifier=relation.identifier
        ) -%}
        {%- if flags.FULL_REFRESH and node.unique_id in selected_resources -%}
            {%- if existing is not none -%}
                {%- do adapter.drop_relation(existing) -%}
            {%- endif -%}
        {%- else -%}
            {%- if existing is not none and existing.is_view -%}
                {{ exceptions.raise_compiler_error(
                    existing ~ ' was written by an earlier release of cdc_changelog (a view of '
                    ~ 'the key state, before history became a Delta table that each run merges '
                    ~ 'into). Rebuild the apply once with `cdc run -- --full-refresh` (every '
                    ~ 'model again from the raw tables).'
                ) }}
            {%- endif -%}
        {%- endif -%}
        {%- do adapter.cache_added(relation.incorporate(type='table')) -%}
        create table if not exists {{ relation }} (
            version_id string,
            feed string,
            source_schema string,
            source_table string,
            primary_key string,
            key_id string,
            row map<string, string>,
            opened_by_operation string,
            valid_from_position string,
            valid_from timestamp,
            closed_by_operation string,
            valid_to_position string,
            valid_to timestamp,
            is_current boolean,
            is_deleted boolean,
            opened_order struct<change_position: string, source_file: string, record_index: bigint>,
            last_event_order struct<change_position: string, source_file: string, record_index: bigint>,
            history_generation string,
            table_key string
        )
        using delta
        partitioned by (feed, table_key)
        tblproperties ('delta.enableChangeDataFeed' = 'true', 'delta.enableDeletionVectors' = 'true')
    {%- endif -%}
{% endmacro %}
