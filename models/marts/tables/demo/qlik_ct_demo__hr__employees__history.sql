{{ config(enabled=var('cdc_demo', false)) }}
{{ cdc_typed_history("qlik_ct_demo", "HR", "EMPLOYEES") }}
