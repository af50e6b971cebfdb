{{ config(materialized='view') }}
{{ cdc_typed_current_state("qlik_kafka_demo", "HR", "EMPLOYEES") }}
