{{ config(enabled=var('cdc_demo', false)) }}
{{ cdc_typed_history("goldengate_demo", "HR", "EMPLOYEES") }}
