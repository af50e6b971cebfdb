{% macro cdc_key_id(feed, source_schema, source_table, primary_key) %}
    {#-
        SQL expression: the key_id of a row key, the MD5 (32 lowercase hex digits) of the JSON
        array [feed, source_schema, source_table, primary_key]; null when primary_key is null.
        Computed once, where changes get their key (int_changes_keyed), and carried from there:
        every join, window and bucketing over a key uses it (issue 45).
    -#}
    case
        when {{ primary_key }} is not null
            then md5(to_json(array({{ feed }}, {{ source_schema }}, {{ source_table }}, {{ primary_key }})))
    end
{%- endmacro %}
