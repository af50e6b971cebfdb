{{ config(enabled=var('cdc_demo', false)) }}
{{ cdc_typed_history("linkexpress_demo", "HR", "EMPLOYEES") }}
