{{ config(enabled=var('cdc_demo', false)) }}
{{ cdc_typed_history("hirdb_demo", "HR", "EMPLOYEES") }}
