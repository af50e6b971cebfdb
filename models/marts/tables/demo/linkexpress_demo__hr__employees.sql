{{ config(enabled=var('cdc_demo', false)) }}
{{ cdc_typed_current_state("linkexpress_demo", "HR", "EMPLOYEES") }}
