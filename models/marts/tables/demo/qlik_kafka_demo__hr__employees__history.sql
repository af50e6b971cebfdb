{{ config(enabled=var('cdc_demo', false)) }}
{{ cdc_typed_history("qlik_kafka_demo", "HR", "EMPLOYEES") }}
