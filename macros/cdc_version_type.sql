{% macro cdc_version_type() %}
    {#- The SQL type of one row version (see cdc_fold_versions). -#}
    struct<
        opened_order: struct<change_position: string, source_file: string, record_index: bigint>,
        opened_at: timestamp,
        operation: string,
        row: map<string, string>,
        is_deleted: boolean
    >
{% endmacro %}
