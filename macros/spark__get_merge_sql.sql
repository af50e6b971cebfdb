{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {#-
        The MERGE of dbt's `merge` incremental strategy on Spark: dbt-spark's statement
        (without its merge_update_columns, merge_exclude_columns and sql_header, which no model
        here sets), and for a model whose config `cdc_delete_column` names a boolean column of
        its SQL that is no column of the table, a matched row where it is true is deleted and
        an unmatched one not inserted (Delta Lake's MERGE INTO ... WHEN MATCHED ... THEN
        DELETE); the other rows are updated or inserted column by column of the table.
        current_state deletes the keys that are no longer live this way (ADR 0038).
    -#}
    {%- set predicates = [] if incremental_predicates is none else [] + incremental_predicates -%}
    {%- set keys = [unique_key] if unique_key is string else (unique_key or []) -%}
    {%- for key in keys -%}
        {%- do predicates.append('DBT_INTERNAL_SOURCE.' ~ key ~ ' = DBT_INTERNAL_DEST.' ~ key) -%}
    {%- endfor -%}
    {%- if not keys -%}
        {%- do predicates.append('FALSE') -%}
    {%- endif -%}
    {%- set delete_column = config.get('cdc_delete_column') -%}
    merge into {{ target }} as DBT_INTERNAL_DEST
    using {{ source }} as DBT_INTERNAL_SOURCE
    on {{ predicates | join(' and ') }}
    {%- if delete_column %}
        {%- set columns = (dest_columns or adapter.get_columns_in_relation(target)) | map(attribute='quoted') | list %}
    when matched and DBT_INTERNAL_SOURCE.{{ delete_column }} then delete
    when matched then update set
        {%- for column in columns %}
        {{ column }} = DBT_INTERNAL_SOURCE.{{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    when not matched and not DBT_INTERNAL_SOURCE.{{ delete_column }} then insert ({{ columns | join(', ') }})
    values ({% for column in columns %}DBT_INTERNAL_SOURCE.{{ column }}{{ ', ' if not loop.last }}{% endfor %})
    {%- else %}
    when matched then update set *
    when not matched then insert *
    {%- endif %}
{% endmacro %}
