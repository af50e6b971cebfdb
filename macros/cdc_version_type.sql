{% macro cdc_version_type() %}
    {#- The SQL type of one row version (macros/_macros.yml). -#}
    struct<
        opened_order: struct<change_position: string, source_file: string, record_index: bigint>,
        opened_at: timestamp,
        operation: string,
        row: map<string, string>,
        is_deleted: boolean
    >
{% endmacro %}
