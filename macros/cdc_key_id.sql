{% macro cdc_key_id(feed, source_schema, source_table, primary_key) %}
    {#- The key_id of a row key: MD5 of its JSON array (macros/_macros.yml). -#}
    case
        when {{ primary_key }} is not null
            then md5(to_json(array({{ feed }}, {{ source_schema }}, {{ source_table }}, {{ primary_key }})))
    end
{%- endmacro %}
