{{ config(enabled=var('cdc_demo', false)) }}
{{ cdc_typed_current_state("qlik_kafka_demo", "HR", "EMPLOYEES") }}
