{% macro cdc_state_watermark_hook() %}
    {#-
        Post-hook of int_key_state: SQL that records this run's generation as the table
        property cdc.state_generation, the watermark the next run reads (cdc_state_watermark).
        It runs after the state is written, so a run killed while Spark moves the state's
        partitions into place, or just after, leaves the previous watermark: the next run
        applies this run's generations again, and the keys they touched, whose state may
        already hold them, are rebuilt from all their changes (int_apply_keys).
    -#}
    alter table {{ this }} set tblproperties ('cdc.state_generation' = '{{ cdc_generation() }}')
{% endmacro %}
