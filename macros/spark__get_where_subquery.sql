{% macro spark__get_where_subquery(relation) %}
    {#- dbt's test `where`, with placeholders that scope a test (macros/_macros.yml). -#}
    {%- set where = config.get('where', '') -%}
    {%- if where -%}
        {%- if '__cdc_touched_keys__' in where -%}
            {%- set where = where | replace('__cdc_touched_keys__', cdc_touched_keys_predicate(relation)) -%}
        {%- endif -%}
        {%- if '__cdc_new_changes__' in where -%}
            {%- set where = where | replace('__cdc_new_changes__', cdc_new_changes_predicate(relation)) -%}
        {%- endif -%}
        {%- if '__cdc_last_generation__' in where -%}
            {%- set where = where | replace('__cdc_last_generation__', cdc_last_generation_predicate()) -%}
        {%- endif -%}
        {%- if '__cdc_new_batches__' in where -%}
            {%- set where = where | replace('__cdc_new_batches__', cdc_new_batches_predicate()) -%}
        {%- endif -%}
        {%- set where = where | replace('__cdc_this__', relation | string) -%}
        {%- set filtered -%}
            (select * from {{ relation }} where {{ where }}) dbt_subquery
        {%- endset -%}
        {{ return(filtered) }}
    {%- endif -%}
    {{ return(relation) }}
{% endmacro %}
