{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {#- dbt-spark's MERGE, with deletes by `cdc_delete_column` (macros/_macros.yml). -#}
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
